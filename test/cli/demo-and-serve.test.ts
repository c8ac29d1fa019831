import { execFile, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli } from '../helpers/cli.js';

// Each command is a real process opening the embedded store: seconds each on a busy machine.
const CLI_TIMEOUT = 600_000;

const dir = mkdtempSync(path.join(tmpdir(), 'lending-demo-'));
const databaseUrl = `pglite://${path.join(dir, 'data')}`;
const env = { PGLITE_LOCK_TIMEOUT_MS: '300', LOG_LEVEL: 'silent' };
const children: ChildProcessWithoutNullStreams[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Starts `demo --serve` on a free port and resolves with its JSON start-up line. */
function startDemoServer(): Promise<{ child: ChildProcessWithoutNullStreams; info: { url: string; org: string; key: string } }> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(['demo', '--serve', '--port', '0', '--json'], databaseUrl, env);
    children.push(child);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      try {
        resolve({ child, info: JSON.parse(stdout) });
      } catch {
        // not the whole document yet
      }
    });
    child.on('exit', (code) => reject(new Error(`demo exited with ${code}`)));
  });
}

/** Starts `demo --serve` on a free port as a person would, and resolves with what it printed once the last curl line is out. */
function startHumanDemoServer(extraEnv: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(['demo', '--serve', '--port', '0'], databaseUrl, { ...env, ...extraEnv });
    children.push(child);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (/\n {2}curl -u [^\n]*\/api\/limits\/cl_demo_01_usd\/'\n/.test(stdout)) resolve(stdout);
    });
    child.on('exit', (code) => reject(new Error(`demo exited with ${code}:\n${stdout}`)));
  });
}

/** Runs one printed line through the shell, exactly as printed. */
async function runPrinted(line: string): Promise<unknown> {
  const { stdout } = await promisify(execFile)('sh', ['-c', line.trim()]);
  return JSON.parse(stdout);
}

describe('lending-api demo', { timeout: CLI_TIMEOUT }, () => {
  it('creates the demo organization and prints working credentials', async () => {
    const result = await runCli(['demo', '--json'], databaseUrl, undefined, env);
    expect(result.code).toBe(0);
    const demo = JSON.parse(result.stdout) as { org: string; key: string; payment_methods: number };
    expect(demo.org).toBe('org_demo');
    expect(demo.payment_methods).toBeGreaterThan(10);
    const human = await runCli(['demo'], databaseUrl, undefined, env);
    expect(human.stdout).toContain("curl -u 'org_demo:lak_");
    // The second run revokes the first run's three keys and says so.
    expect(human.stdout).toMatch(/^revoked: +3 key\(s\) of org_demo from earlier runs \(key_\w+, key_\w+, key_\w+\): only the three above work now$/m);
    // After the keys, the line that sets the names the docs' examples use, read key R, write key W and webhooks key H.
    const read = /^API key: +(lak_\S+) /m.exec(human.stdout)?.[1];
    const write = /^write key: +(lak_\S+) /m.exec(human.stdout)?.[1];
    const webhooks = /^webhooks key: +(lak_\S+) /m.exec(human.stdout)?.[1];
    expect(human.stdout).toContain(
      `\npaste this line into each shell you try the API from (the examples in README.md and docs/ use $ORG, $R, $W and $H):\n  export ORG=org_demo R='${read}' W='${write}' H='${webhooks}'\n`,
    );
  });

  it('serves the demo data in the same process and keeps the data directory to itself', async () => {
    const { child, info } = await startDemoServer();
    const auth = `Basic ${Buffer.from(`${info.org}:${info.key}`).toString('base64')}`;
    const response = await fetch(`${info.url}/api/methods/?currency=usd`, { headers: { authorization: auth } });
    expect(response.status).toBe(200);
    const page = (await response.json()) as { count: number; items: { currency: string }[] };
    expect(page.count).toBeGreaterThan(0);
    expect(page.items.every((item) => item.currency === 'USD')).toBe(true);

    const blocked = await runCli(['org', 'create', '--name', 'Late'], databaseUrl, undefined, env);
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toContain(`is in use by process ${child.pid}`);

    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const after = await runCli(['org', 'create', '--name', 'Late', '--json'], databaseUrl, undefined, env);
    expect(after.code).toBe(0);
  });

  it('prints the metrics URL when METRICS_PORT is set, as serve does, and /metrics answers there', async () => {
    const printed = await startHumanDemoServer({ METRICS_PORT: '0' });
    const metricsUrl = /^lending-api listening on http:\/\/\S+ \(pglite:\/\/\S+\); metrics on (http:\/\/\S+\/metrics)$/m.exec(printed)?.[1];
    expect(metricsUrl, printed).toBeDefined();
    const metrics = await fetch(metricsUrl ?? '');
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('lending_api_http_requests_total');
    // The data directory is the next test's.
    const child = children.at(-1);
    const exited = new Promise((resolve) => child?.on('exit', resolve));
    child?.kill('SIGTERM');
    await exited;
  });

  it('prints a write key and a curl POST line that records a drawdown once on the embedded store while it serves', async () => {
    const printed = await startHumanDemoServer();
    const post = printed.split('\n').find((line) => line.startsWith('  curl -X POST '));
    const get = printed.split('\n').find((line) => /^ {2}curl -u .*\/api\/limits\/cl_demo_01_usd\/'$/.test(line));
    expect(post).toMatch(/-H 'Idempotency-Key: demo-[0-9a-f-]{36}' -H 'Content-Type: application\/json' -d '\{"amount":"100\.00"\}'$/);
    expect(printed).toMatch(/write key: +lak_\S+ +\(id key_\S+; write; shown once\)/);
    const before = (await runPrinted(get ?? '')) as { balance: number; outstanding: number };

    const created = (await runPrinted(post ?? '')) as { entry: { kind: string; amount: number }; limit: { balance: number } };
    expect(created.entry).toMatchObject({ kind: 'drawdown', amount: 100 });
    expect(created.limit.balance).toBeCloseTo(before.balance - 100, 2);
    expect(await runPrinted(get ?? '')).toMatchObject({ balance: created.limit.balance, outstanding: before.outstanding + 100 });

    // The same line again is the same logical drawdown: answered from the first time, the balance moves once.
    expect(await runPrinted(post ?? '')).toEqual(created);
    expect(await runPrinted(get ?? '')).toMatchObject({ balance: created.limit.balance });

    // Pasted into a shell, the export line sets $ORG, $R, $W and $H, and the docs' examples work with them as typed.
    const exported = printed.split('\n').find((line) => line.startsWith('  export ')) ?? '';
    const url = /^lending-api listening on (\S+) /m.exec(printed)?.[1] ?? '';
    const limitAs = (key: string) => runPrinted(`${exported.trim()}\ncurl -s -u "$ORG:$${key}" '${url}/api/limits/cl_demo_01_usd/'`);
    expect(await limitAs('R')).toMatchObject({ uid: 'cl_demo_01_usd', balance: created.limit.balance });
    expect(await limitAs('W')).toMatchObject({ uid: 'cl_demo_01_usd', balance: created.limit.balance });
    const endpoints = await runPrinted(`${exported.trim()}\ncurl -s -u "$ORG:$H" '${url}/api/webhook_endpoints/'`);
    expect(endpoints).toMatchObject({ count: 0, items: [] });
  });
});
