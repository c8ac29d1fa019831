import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { describeWithPromtool } from './promtool.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SECTION = '## Alerts and runbook';
/** The prefix the shipped runbook_urls start with. */
const SHIPPED_PREFIX = 'https://lending-api.dev/docs/';

/** The shell blocks of docs/operations.md's alerts section, as an operator would copy them (list indentation removed). */
async function sectionCommands(): Promise<string[]> {
  const text = await readFile(path.join(ROOT, 'docs/operations.md'), 'utf8');
  const section = text.split(`\n${SECTION}\n`)[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/^( *)```sh\n([\s\S]*?)^\1```$/gm)].map(([, indent = '', body = '']) =>
    body
      .split('\n')
      .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
      .join('\n'),
  );
}

/** Every file under `dir`, with its path relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

const scratchDirs: string[] = [];
afterAll(() => Promise.all(scratchDirs.map((dir) => rm(dir, { recursive: true, force: true }))));

/** Runs `commands` with `sh -e` in a fresh copy of the repository's ops/, promtool on the PATH as the docs assume. */
async function runInCopyOfOps(commands: string, promtool: string): Promise<{ code: number; output: string; copy: string }> {
  const copy = await mkdtemp(path.join(tmpdir(), 'lending-ops-docs-'));
  scratchDirs.push(copy);
  await cp(path.join(ROOT, 'ops'), path.join(copy, 'ops'), { recursive: true });
  const env = { ...process.env, PATH: `${path.dirname(promtool)}${path.delimiter}${process.env.PATH ?? ''}` };
  return new Promise((resolve) => {
    execFile('sh', ['-e', '-c', commands], { cwd: copy, env }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}`, copy });
    });
  });
}

describeWithPromtool(`docs/operations.md "${SECTION.slice(3)}": its commands, run as written`, (promtool) => {
  it('has the runbook-URL rewrite and the check-and-test commands', async () => {
    const blocks = await sectionCommands();
    expect(blocks.some((block) => block.includes('sed -i') && block.includes(SHIPPED_PREFIX))).toBe(true);
    expect(blocks.filter((block) => /^promtool check rules .*promtool test rules /m.test(block))).toHaveLength(blocks.length);
  });

  // Regression: the docs rewrote the rules' prefix only, and `promtool test rules` then failed on the
  // unit tests' 11 expected runbook_urls, which still named lending-api.dev.
  it('passes promtool check rules and test rules after each block, the runbook-URL rewrite included', async () => {
    const blocks = await sectionCommands();
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) {
      const run = await runInCopyOfOps(block, promtool);
      expect(run.code, `${block}\n---\n${run.output}`).toBe(0);
      expect(run.output).toMatch(/SUCCESS: \d+ rules found/);
      expect(run.output).toMatch(/^Unit Testing: .*\n +SUCCESS$/m);
      if (!block.includes('sed -i')) continue;
      // The rewrite reached every file that named the shipped prefix.
      const opsCopy = path.join(run.copy, 'ops');
      const stillShipped = [];
      for (const file of await filesUnder(opsCopy)) {
        if ((await readFile(path.join(opsCopy, file), 'utf8')).includes(SHIPPED_PREFIX)) stillShipped.push(file);
      }
      expect(stillShipped).toEqual([]);
    }
  });
});
