import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';
import { RESOURCES } from '../../src/resources/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFile(path.join(ROOT, file), 'utf8');

/** How the service described itself while it only served reads: it now records writes and pushes events. */
const READ_ONLY_WORDING = /read side|only reads|read-only (service|api)/i;

describe('what the project says it is', () => {
  it('says it writes and pushes events, not that it is the read side: package.json, README, the /docs intro', async () => {
    const description = (JSON.parse(await read('package.json')) as { description: string }).description;
    const readmeIntro = (await read('README.md')).split('\n\n')[1] ?? '';
    const docsIntro = String((lendingApiDocument(RESOURCES).info as { description?: unknown }).description);
    for (const [where, text] of Object.entries({ description, readmeIntro, docsIntro })) {
      expect(text, where).not.toMatch(READ_ONLY_WORDING);
      expect(text, where).toMatch(/drawdown/i);
      expect(text, where).toMatch(/event|webhook/i);
    }
  });

  it('has no read-only wording left in the docs, the SDK README or the OpenAPI descriptions', async () => {
    const docs = (await readdir(path.join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
    const files = ['README.md', 'packages/client/README.md', 'openapi.json', ...docs];
    const stale: string[] = [];
    for (const file of files) {
      (await read(file)).split('\n').forEach((line, index) => {
        if (READ_ONLY_WORDING.test(line)) stale.push(`${file}:${index + 1}: ${line.trim()}`);
      });
    }
    expect(stale).toEqual([]);
  });

  it('names only source files that exist in the migrations\' comments (014 named loan-writes.ts, which is loan-operations.ts)', async () => {
    const dir = path.join(ROOT, 'src/store/migrations');
    const missing: string[] = [];
    for (const file of (await readdir(dir)).filter((name) => name.endsWith('.sql'))) {
      for (const [named] of (await readFile(path.join(dir, file), 'utf8')).matchAll(/\bsrc\/[\w./-]+\.ts\b/g)) {
        if (!existsSync(path.join(ROOT, named))) missing.push(`${file}: ${named}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
