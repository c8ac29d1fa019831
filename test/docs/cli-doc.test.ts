import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgliteDirectoryFromTemplate } from '../helpers/pglite-template.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'bin/lending-api');

// docs/cli.md's "Loading data", line by line as written, on a fresh embedded store: it once imported into
// org_acme without creating it ("no organization 'org_acme'").
describe('docs/cli.md: Loading data, as typed', { timeout: 600_000 }, () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cli-doc-'));
    await pgliteDirectoryFromTemplate(path.join(dir, 'data'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates the organization, imports the file, draws and repays, each command exiting 0 with the balance the comments say', async () => {
    const section = (await readFile(path.join(ROOT, 'docs/cli.md'), 'utf8')).split('## Loading data')[1]!.split('\n## ')[0]!;
    const [, jsonl] = /```json\n([\s\S]*?)```/.exec(section)!;
    const [, commands] = /```sh\n([\s\S]*?)```/.exec(section)!;
    await writeFile(path.join(dir, 'data.jsonl'), jsonl!);
    const lines = commands!.trim().split('\n');
    expect(lines[0]).toMatch(/^npx lending-api org create .*--uid org_acme/);
    // `npx lending-api` in a checkout runs bin/lending-api; here the scratch directory is not one.
    const env = { ...process.env, DATABASE_URL: 'pglite://./data', DEBUG: '' };
    for (const line of lines) {
      const result = await run('sh', ['-c', line.replace(/^npx lending-api /, `"${process.execPath}" "${BIN}" `)], { cwd: dir, env }).catch(
        (error: { code: number; stderr: string }) => error,
      );
      expect('stdout' in result ? 0 : result.code, `${line}\n${'stderr' in result ? result.stderr : ''}`).toBe(0);
    }
    // There is no command that only reads a limit: a last drawdown of 200.00 answers with it.
    const limit = await run(process.execPath, [BIN, 'draw', '--org', 'org_acme', '--limit', 'cl_1', '--amount', '200.00', '--id', 'dd_check', '--json'], { cwd: dir, env });
    // 1200.00 from the file + 500.00 − 200.00 = 1500.00, then this check's own 200.00.
    expect(JSON.parse(limit.stdout)).toMatchObject({ outstanding: 1700 });
  });
});
