import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// `npm run build` and the compiled entry production services run (docs/operations.md).
describe('the compiled build', () => {
  let outDir = '';
  beforeAll(async () => {
    // Inside the project, so the compiled code resolves node_modules as dist/ does.
    outDir = await mkdtemp(path.join(ROOT, '.build-test-'));
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    await run(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: ROOT });
    await run(process.execPath, ['scripts/copy-migrations.mjs', outDir], { cwd: ROOT });
  }, 120_000);
  afterAll(async () => {
    await rm(outDir, { recursive: true, force: true });
  });

  it('runs the CLI without tsx and finds every migration next to the compiled store', async () => {
    const entry = path.join(outDir, 'cli/run.js');
    const env = { ...process.env, DATABASE_URL: 'pglite://memory' };
    const migrated = await run(process.execPath, [entry, 'migrate'], { cwd: ROOT, env });
    expect(migrated.stdout).toMatch(`applied ${(await readdir(path.join(ROOT, 'src/store/migrations'))).filter((file) => file.endsWith('.sql')).sort().map((file) => file.slice(0, -4)).join(', ')} to pglite://memory`);

    const failed = await run(process.execPath, [entry, 'key', 'list', '--org', 'org_missing'], { cwd: ROOT, env }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed).toMatchObject({ code: 1, stderr: "lending-api: no organization 'org_missing'\n" });
  });
});
