import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { createOrganization } from '../../src/organizations/organizations.js';
import { SecretBox } from '../../src/webhooks/secret-box.js';
import { spawnCli } from '../helpers/cli.js';
import { importLines } from '../helpers/import-lines.js';
import { pgliteDirectoryFromTemplate } from '../helpers/pglite-template.js';
import { spawnServer } from '../helpers/spawn-server.js';
import { basicAuthorization } from '../helpers/tenants.js';
import { insertEndpoint } from '../webhooks/deliverer-helpers.js';
import { startHttpReceiver, type Receiver } from '../webhooks/receivers.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

interface Running {
  readonly child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  readonly exited: Promise<number | string>;
}

function run(args: string[], databaseUrl: string, env: Record<string, string>): Running {
  const child = spawnCli(args, databaseUrl, env);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  child.stdin.end();
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Waits, with no tight deadline (the machine is busy), until `done` holds; fails naming `what`. */
async function waitFor(done: () => boolean | Promise<boolean>, what: string, ms = 240_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await sleep(50);
  }
}

// Real processes on one embedded store, one after the other: serve and deliver start in seconds on a busy machine.
describe('API nodes and delivery workers apart: serve --deliver off, then lending-api deliver', { timeout: 600_000 }, () => {
  it('serve --deliver off publishes a drawdown’s events and delivers none; deliver then delivers them, signed, and serves no API', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'deliver-cli-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const dataDir = path.join(dir, 'db');
    const receiver: Receiver = await startHttpReceiver((_request, response) => response.writeHead(204).end());
    cleanups.push(() => receiver.close());
    const key = randomBytes(32);
    const env = { WEBHOOK_SECRET_KEY: key.toString('base64'), WEBHOOK_ALLOW_PRIVATE: '1', RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'info' };
    let writeKey = '';
    let secret = '';
    await pgliteDirectoryFromTemplate(dataDir, async (store) => {
      const org = await createOrganization(store, 'Acme', 'acme');
      writeKey = (await createApiKey(store, 'acme', undefined, 'write')).key;
      ({ secret } = await insertEndpoint(store, org.id, `http://127.0.0.1:${receiver.port}/hooks`, ['credit_limit.updated', 'ledger_entry.created'], SecretBox.fromKey(key)));
      await importLines(store, 'acme', [{ object: 'credit_limit', uid: 'cl_1', entity: 'ent_1', currency: 'USD', capacity: '1000.00', rate: '0.0005' }]);
    });
    const databaseUrl = `pglite://${dataDir}`;

    const api = await spawnServer(['--deliver', 'off'], { DATABASE_URL: databaseUrl, ...env });
    cleanups.push(async () => {
      api.child.kill('SIGKILL');
      await api.exited;
    });
    const drawn = await fetch(`${api.url}/api/limits/cl_1/drawdowns/`, {
      method: 'POST',
      headers: { authorization: basicAuthorization('acme', writeKey), 'idempotency-key': 'deliver-off-1', 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '250.00' }),
    });
    expect(drawn.status).toBe(201);
    // Published (in the log), so a delivering node would have claimed them at once.
    await waitFor(async () => {
      const events = await fetch(`${api.url}/api/events/?type=ledger_entry.created`, { headers: { authorization: basicAuthorization('acme', writeKey) } });
      return ((await events.json()) as { count?: number }).count === 1;
    }, 'the drawdown’s events in the log');
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
    expect(api.stderr() + api.stdout()).toContain('webhooks are not delivered by this node');
    // On the embedded store nothing else can deliver while it serves: said as a warning, not left to be found out.
    expect(api.stderr() + api.stdout()).toContain('no other process can deliver them while it serves');
    expect(receiver.requests).toHaveLength(0);

    const worker = run(['deliver', '--json'], databaseUrl, env);
    await waitFor(() => receiver.requests.length >= 2, 'the deliveries');
    const started = JSON.parse(/\{[\s\S]*?\n\}/.exec(worker.stdout())![0]) as Record<string, unknown>;
    expect(started).toMatchObject({ delivering: true, metrics: null });
    expect(started).not.toHaveProperty('url');
    const webhook = new Webhook(secret);
    const types = receiver.requests.map((request) => {
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      return (webhook.verify(request.body, headers) as { type: string }).type;
    });
    expect(types.sort()).toEqual(['credit_limit.updated', 'ledger_entry.created']);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(receiver.requests).toHaveLength(2);
  });

  it('deliver without a reachable database exits non-zero, saying where it tried', async () => {
    const worker = run(['deliver'], 'postgres://postgres@127.0.0.1:1/none', {});
    expect(await worker.exited).not.toBe(0);
    expect(worker.stderr()).toMatch(/unreachable|ECONNREFUSED/);
  });
});
