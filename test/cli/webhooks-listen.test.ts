import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { createOrganization } from '../../src/organizations/organizations.js';
import { spawnCli } from '../helpers/cli.js';
import { importLines } from '../helpers/import-lines.js';
import { pgliteDirectoryFromTemplate } from '../helpers/pglite-template.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { basicAuthorization } from '../helpers/tenants.js';
import { startHttpReceiver, type ReceivedRequest, type Receiver } from '../webhooks/receivers.js';

/** A running `webhooks listen` and what it printed so far. */
interface Listener {
  readonly child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  readonly exited: Promise<number | string>;
  /** The exit code once it has ended. */
  ended(): number | string | undefined;
}

function listen(args: string[], json = true): Listener {
  // DATABASE_URL points nowhere: the command reads the log over HTTP only.
  const child = spawnCli(['webhooks', 'listen', ...(json ? ['--json'] : []), '--interval', '200', ...args], 'postgres://postgres@127.0.0.1:1/none');
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  child.stdin.end();
  let ended: number | string | undefined;
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve((ended = code ?? signal ?? 'unknown'))));
  return { child, stdout: () => out, stderr: () => err, exited, ended: () => ended };
}

function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Waits (no tight deadline: the machine is busy) until `done` holds; fails at once if the listener ends first, saying what it printed. */
async function waitFor(done: () => boolean, listener: Listener, ms = 120_000): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    const ended = listener.ended();
    if (ended !== undefined || Date.now() > until) {
      throw new Error(`${ended === undefined ? 'gave up waiting' : `webhooks listen exited (${ended})`}; it printed:\n${listener.stdout()}${listener.stderr()}`);
    }
    await sleep(50);
  }
}

/** The receiver's requests, each checked with the reference Standard Webhooks library under `secret`: the events it carried. */
function verified(requests: readonly ReceivedRequest[], secret: string): { id: string; type: string; data: { object: Record<string, unknown> } }[] {
  const webhook = new Webhook(secret);
  return requests.map((request) => {
    const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
    const event = webhook.verify(request.body, headers) as { id: string; type: string; data: { object: Record<string, unknown> } };
    expect(request.headers['webhook-id']).toBe(event.id);
    return event;
  });
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

function stopOnCleanup(running: { child: { kill(signal: NodeJS.Signals): boolean }; exited: Promise<unknown> }): void {
  cleanups.push(async () => {
    running.child.kill('SIGKILL');
    await running.exited;
  });
}

// Real processes: serve and the CLI start in seconds on a busy machine.
describe('lending-api webhooks listen --forward-to', { timeout: 600_000 }, () => {
  it('forwards the events of a drawdown made after it started to a local URL, signed so standardwebhooks verifies them, and stops on SIGINT', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'webhooks-listen-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const dataDir = path.join(dir, 'db');
    let keys = { read: '', write: '' };
    await pgliteDirectoryFromTemplate(dataDir, async (store) => {
      await createOrganization(store, 'Acme', 'acme');
      keys = { read: (await createApiKey(store, 'acme')).key, write: (await createApiKey(store, 'acme', undefined, 'write')).key };
      await importLines(store, 'acme', [{ object: 'credit_limit', uid: 'cl_1', entity: 'ent_1', currency: 'USD', capacity: '1000.00', rate: '0.0005' }]);
    });
    const server: SpawnedServer = await spawnServer(['--rate-limit', '0'], { DATABASE_URL: `pglite://${dataDir}` });
    stopOnCleanup(server);
    const receiver: Receiver = await startHttpReceiver((_request, response) => response.writeHead(204).end());
    cleanups.push(() => receiver.close());

    const listener = listen(['--forward-to', `http://127.0.0.1:${receiver.port}/hooks`, '--org', 'acme', '--key', keys.read, '--api-url', server.url]);
    stopOnCleanup(listener);
    await waitFor(() => jsonLines(listener.stdout()).some((line) => line.ready === true), listener);
    const ready = jsonLines(listener.stdout())[0] ?? {};
    expect(ready.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);

    const drawn = await fetch(`${server.url}/api/limits/cl_1/drawdowns/`, {
      method: 'POST',
      headers: { authorization: basicAuthorization('acme', keys.write), 'idempotency-key': 'listen-1', 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '250.00' }),
    });
    expect(drawn.status).toBe(201);
    await waitFor(() => receiver.requests.length >= 2, listener);

    // The credit limit's creation (before the listener started) is not forwarded: only what came after.
    const events = verified(receiver.requests, String(ready.secret));
    expect(events.map((event) => event.type).sort()).toEqual(['credit_limit.updated', 'ledger_entry.created']);
    expect(events.find((event) => event.type === 'credit_limit.updated')?.data.object).toMatchObject({ uid: 'cl_1', outstanding: 250, balance: 750 });
    expect(receiver.requests.every((request) => request.method === 'POST' && request.url === '/hooks')).toBe(true);
    // One line per event: its type, id and the local answer's status.
    const lines = jsonLines(listener.stdout()).filter((line) => line.ready === undefined);
    expect(lines.map((line) => [line.type, line.id, line.status])).toEqual(events.map((event) => [event.type, event.id, 204]));

    listener.child.kill('SIGINT');
    expect(await listener.exited).toBe(0);
    expect(listener.stderr()).toContain('webhooks listen stopped');
    expect(receiver.requests).toHaveLength(2);
  });

  it('follows the stream from --since, forwards each event once in log order with the --secret given, and reports a receiver that fails', async () => {
    const api = await startFakeEventsApi('acme', 'sk_test');
    cleanups.push(() => api.close());
    for (let i = 0; i < 3; i += 1) api.add('payment_method.created');
    let answered = 0;
    // The receiver refuses the fifth event: the listener says so and goes on.
    const receiver = await startHttpReceiver((_request, response) => response.writeHead((answered += 1) === 5 ? 500 : 200).end('ok'));
    cleanups.push(() => receiver.close());
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

    const since = api.events[1]?.created_at ?? '';
    const listener = listen(['--forward-to', `http://127.0.0.1:${receiver.port}/`, '--org', 'acme', '--key', 'sk_test', '--api-url', api.url, '--since', since, '--secret', secret]);
    stopOnCleanup(listener);
    await waitFor(() => receiver.requests.length >= 2, listener);
    // 23 more, arriving while the listener follows the stream.
    for (let i = 0; i < 23; i += 1) api.add('credit_limit.updated');
    await waitFor(() => receiver.requests.length >= 25, listener);
    const requestsBefore = api.requests.length;
    await sleep(1000); // nothing comes twice, and nothing more is asked: the stream carries every event
    expect(api.requests.length - requestsBefore).toBe(0);

    const forwarded = verified(receiver.requests, secret).map((event) => event.id);
    expect(forwarded).toEqual(api.events.slice(1).map((event) => event.id));
    const lines = jsonLines(listener.stdout()).filter((line) => line.ready === undefined);
    expect(lines.map((line) => line.status)).toEqual(forwarded.map((_id, n) => (n === 4 ? 500 : 200)));
    expect(lines[4]?.error).toBe('the receiver answered 500');
    // One look at the log (where to start), then one stream.
    expect(api.requests.map((url) => new URL(url, 'http://fake').pathname)).toEqual(['/api/events/', '/api/events/stream/']);

    listener.child.kill('SIGINT');
    expect(await listener.exited).toBe(0);
  });

  it('says, beside a receiver\'s 400, that the receiver may be verifying with another secret', async () => {
    const api = await startFakeEventsApi('acme', 'sk_test');
    cleanups.push(() => api.close());
    api.add('payment_method.created');
    const receiver = await startHttpReceiver((_request, response) => response.writeHead(400).end('bad signature'));
    cleanups.push(() => receiver.close());
    const listener = listen(['--forward-to', `http://127.0.0.1:${receiver.port}/`, '--org', 'acme', '--key', 'sk_test', '--api-url', api.url, '--since', api.events[0]!.created_at], false);
    stopOnCleanup(listener);
    await waitFor(() => listener.stdout().includes('→ 400'), listener);
    expect(listener.stdout()).toMatch(/→ 400 \(a 400 is often a signature checked under another secret: verify with the one listen printed, or pass yours with --secret\)/);
    listener.child.kill('SIGINT');
    expect(await listener.exited).toBe(0);
  });

  it('refuses a --since the server does not read before it says it is ready, exit 1', async () => {
    const api = await startFakeEventsApi('acme', 'sk_test');
    cleanups.push(() => api.close());
    api.add('payment_method.created');
    const listener = listen(['--forward-to', 'http://127.0.0.1:9/', '--org', 'acme', '--key', 'sk_test', '--api-url', api.url, '--since', 'yesterday']);
    stopOnCleanup(listener);
    expect(await listener.exited).toBe(1);
    expect(listener.stderr()).toContain("created_from: 'yesterday' is not a time");
    expect(listener.stdout()).not.toContain('ready');
  });

  it('refuses bad credentials with a message, exit 1', async () => {
    const api = await startFakeEventsApi('acme', 'sk_test');
    cleanups.push(() => api.close());
    const listener = listen(['--forward-to', 'http://127.0.0.1:9/', '--org', 'acme', '--key', 'wrong', '--api-url', api.url]);
    stopOnCleanup(listener);
    expect(await listener.exited).toBe(1);
    expect(listener.stderr()).toContain('refused the credentials of acme (401)');
  });
});

interface FakeEvent {
  id: string;
  object: 'event';
  type: string;
  created_at: string;
  data: { object: { uid: string } };
}

/**
 * GET /api/events/ and GET /api/events/stream/ as SPEC §3c and docs/api.md describe them, for one organization:
 * the log newest first by default, `order_by=created_at` oldest first, `created_from` inclusive, pages of 10; the
 * stream after `Last-Event-ID`, at `created_from` or at the end, each event as it is added.
 */
async function startFakeEventsApi(org: string, key: string) {
  const events: FakeEvent[] = [];
  const requests: string[] = [];
  const streams = new Set<http.ServerResponse>();
  const frame = (event: FakeEvent) => `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
  const base = Date.UTC(2026, 0, 1);
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://fake');
    requests.push(url.pathname + url.search);
    if (request.headers.authorization !== basicAuthorization(org, key)) return void response.writeHead(401, { 'content-type': 'application/problem+json' }).end('{"status":401}');
    if (url.pathname === '/api/events/stream/') {
      const lastEventId = request.headers['last-event-id'];
      const from = url.searchParams.get('created_from');
      let start = events.length;
      if (typeof lastEventId === 'string') start = events.findIndex((event) => event.id === lastEventId) + 1;
      else if (from !== null) start = events.findIndex((event) => Date.parse(event.created_at) >= Date.parse(from));
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(': the log from the start\n\n');
      for (const event of events.slice(start === -1 ? events.length : start)) response.write(frame(event));
      streams.add(response);
      response.once('close', () => streams.delete(response));
      return;
    }
    if (url.pathname !== '/api/events/') return void response.writeHead(404).end();
    const ascending = url.searchParams.get('order_by') === 'created_at';
    const from = url.searchParams.get('created_from');
    if (from !== null && Number.isNaN(Date.parse(from))) {
      return void response.writeHead(422, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ status: 422, detail: `created_from: '${from}' is not a time` }));
    }
    let matching = events.filter((event) => from === null || Date.parse(event.created_at) >= Date.parse(from));
    if (!ascending) matching = [...matching].reverse();
    const cursor = url.searchParams.get('cursor');
    const start = cursor ? Number(cursor.slice(1)) : 0;
    const items = matching.slice(start, start + 10);
    const more = start + 10 < matching.length;
    const next = cursor !== null && more ? new URL(`${url.pathname}?${withCursor(url.searchParams, `c${start + items.length}`)}`, address()).toString() : null;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count: matching.length, next, previous: null, items }));
  });
  const withCursor = (params: URLSearchParams, cursor: string) => {
    const copy = new URLSearchParams(params);
    copy.set('cursor', cursor);
    return copy.toString();
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: address(),
    events,
    requests,
    add(type: string): void {
      const n = events.length;
      const created = new Date(base + n * 1000).toISOString().replace('Z', '000Z');
      const event: FakeEvent = { id: `evt_${String(n).padStart(4, '0')}`, object: 'event', type, created_at: created, data: { object: { uid: `obj_${n}` } } };
      events.push(event);
      for (const stream of streams) stream.write(frame(event));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
