import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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

describe('lending-api demo', { timeout: CLI_TIMEOUT }, () => {
  it('creates the demo organization and prints working credentials', async () => {
    const result = await runCli(['demo', '--json'], databaseUrl, undefined, env);
    expect(result.code).toBe(0);
    const demo = JSON.parse(result.stdout) as { org: string; key: string; payment_methods: number };
    expect(demo.org).toBe('org_demo');
    expect(demo.payment_methods).toBeGreaterThan(10);
    const human = await runCli(['demo'], databaseUrl, undefined, env);
    expect(human.stdout).toContain("curl -u 'org_demo:lak_");
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
});
