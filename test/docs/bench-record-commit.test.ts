import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { commitOf } from '../../bench/results-record.js';

let repo: string;
const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.com', ...args], { cwd: repo, stdio: 'ignore' });

beforeAll(async () => {
  repo = await mkdtemp(path.join(tmpdir(), 'bench-commit-'));
  await mkdir(path.join(repo, 'src'));
  await mkdir(path.join(repo, 'bench'));
  await writeFile(path.join(repo, 'src/service.ts'), 'export const a = 1;\n');
  await writeFile(path.join(repo, 'bench/run.ts'), 'export const b = 1;\n');
  await writeFile(path.join(repo, 'notes.md'), 'notes\n');
  git('init', '-q');
  git('add', '.');
  git('commit', '-qm', 'first');
});

afterAll(async () => {
  await rm(repo, { recursive: true, force: true });
});

// The harness reads the commit from bench/ (its own directory): the record's `+dirty` must see the whole
// repository's code from there, where it looked for bench/src and bench/bench and never found a change.
it('a bench record names the commit, +dirty when src/ or bench/ changed, read from the bench directory', async () => {
  const fromBench = path.join(repo, 'bench');
  expect(commitOf(fromBench)).toMatch(/^[0-9a-f]{7,}$/);
  await writeFile(path.join(repo, 'notes.md'), 'notes, changed\n');
  expect(commitOf(fromBench)).toMatch(/^[0-9a-f]{7,}$/);
  await writeFile(path.join(repo, 'src/service.ts'), 'export const a = 2;\n');
  expect(commitOf(fromBench)).toMatch(/^[0-9a-f]{7,}\+dirty$/);
  git('checkout', '--', 'src');
  await writeFile(path.join(repo, 'bench/run.ts'), 'export const b = 2;\n');
  expect(commitOf(fromBench)).toMatch(/^[0-9a-f]{7,}\+dirty$/);
});
