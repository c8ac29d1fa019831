import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/*
 * Two workers share the test files; a slow file started last keeps one worker
 * busy while the other idles. Vitest orders files by the durations of the
 * previous run, but a fresh clone has none (it would order them by size), so
 * the slowest files, as measured on the 2-core development machine, start
 * first, slowest first; the rest follow in vitest's own order.
 */
const SLOWEST = [
  'test/http/docs-page.test.ts',
  'test/cli/import-cli.test.ts',
  'test/cli/demo-and-serve.test.ts',
  'test/cli/org-and-keys.test.ts',
  'test/listing/list-cache.property.test.ts',
  'test/cli/compiled-entry.test.ts',
  'test/examples/prepare-loan.test.ts',
  'test/store/pglite-load-data-dir.test.ts',
  'test/store/database-outage.test.ts',
  'test/http/list-model.property.test.ts',
  'test/import/import-jsonl.test.ts',
  'test/http/hostile-input.test.ts',
  'test/client/package.test.ts',
  'test/ledger/updated-at.property.test.ts',
  'test/server/cluster.test.ts',
];

export class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = SLOWEST.indexOf(relative(this.ctx.config.root, file.moduleId).replaceAll('\\', '/'));
      return index === -1 ? SLOWEST.length : index;
    };
    // Array.prototype.sort is stable: unlisted files keep vitest's order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
