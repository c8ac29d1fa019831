import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoServer, type DemoServer } from '../helpers/demo-server.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const readme = () => readFile(path.join(ROOT, 'README.md'), 'utf8');

/** The fenced blocks of `markdown` in `language`, in order. */
function blocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp('^```' + language + '\\n([\\s\\S]*?)^```', 'gm'))].map((match) => match[1]!);
}

describe('README.md', () => {
  it('needs nothing beyond Node.js in its commands, nor does docs/: no uuidgen for an Idempotency-Key (regression: 400 idempotency_key_missing as typed)', async () => {
    const { readdir } = await import('node:fs/promises');
    const docs = await Promise.all((await readdir(path.join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => readFile(path.join(ROOT, 'docs', name), 'utf8')));
    for (const text of [await readme(), ...docs]) expect(text).not.toMatch(/\$\(uuidgen\)/);
  });

  it('starts its quick start with two commands: install and run the demo; install and test', async () => {
    const quickStart = (await readme()).split('## Quick start')[1]!.split('\n## ')[0]!;
    const commands = blocks(quickStart, 'sh').slice(0, 2).map((block) => block.split('#')[0]!.trim());
    expect(commands).toEqual(['npm ci && npm run demo', 'npm ci && npm test']);
  });

  it('uses an Idempotency-Key in only one of its SDK snippets and loan examples, here and in docs/sdk.md', async () => {
    const docs = (await readme()) + (await readFile(path.join(ROOT, 'docs/sdk.md'), 'utf8'));
    const snippetKeys = new Set([...docs.matchAll(/idempotencyKey: '([^']+)'/g)].map((match) => match[1]));
    const exampleLoans = new Set([...docs.matchAll(/example:prepare-loan -- .*--loan (\S+)/g)].map((match) => match[1]));
    expect(exampleLoans.size).toBeGreaterThan(0);
    expect([...exampleLoans].filter((loan) => snippetKeys.has(loan))).toEqual([]);
  });
});

// Run in the README's order on a fresh demo: its SDK snippet (which draws with the write key), then the
// prepare-loan command. Both used `loan-17` once, and the example then failed with 422 idempotency_key_reused.
describe('README.md: the SDK snippet, then the prepare-loan command, as typed, against the demo', () => {
  let demo: DemoServer;
  let scratch = '';

  beforeAll(async () => {
    // `npx tsx try.ts` imports the SDK's compiled dist/, which `npm ci` builds.
    await run(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT });
    demo = await startDemoServer();
    // Inside the checkout, as the README says: `lending-api-client` resolves to the workspace package.
    scratch = await mkdtemp(path.join(ROOT, '.build-test-readme-'));
  }, 600_000);
  afterAll(async () => {
    demo?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('draws once in the snippet, then the example is READY and LENT for its own loan', async () => {
    const text = await readme();
    const [snippet] = blocks(text, 'ts');
    // The one change: the demo here listens on a free port, not 3000.
    await writeFile(path.join(scratch, 'try.ts'), snippet!.replaceAll('http://127.0.0.1:3000', demo.url));
    const env = { ...process.env, LENDING_API_KEY: demo.write_key, LENDING_API_URL: demo.url };
    const tried = await run('npx', ['tsx', 'try.ts'], { cwd: scratch, env });
    expect(tried.stdout).toMatch(/^cl_demo_05_usd \d+/m);

    const command = /^LENDING_API_KEY=\$W (npm run example:prepare-loan -- .*)$/m.exec(text)?.[1];
    expect(command).toBeDefined();
    const [npm, ...args] = command!.split(' ');
    const example = await run(npm!, args, { cwd: ROOT, env }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect(example.stdout, 'stderr' in example ? example.stderr : '').toMatch(/^READY +ent_demo_03 can borrow 5000\.00 USD[\s\S]*^LENT +ln_\S+ \(loan loan-17\)/m);
    const again = await run(npm!, args, { cwd: ROOT, env });
    expect(again.stdout).toMatch(/^ALREADY LENT ln_\S+ \(loan loan-17\)/m);
  }, 600_000);
});
