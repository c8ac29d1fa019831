import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deliverOnce, WEBHOOK_USER_AGENT, type AttemptResult, type DeliveryAttempt } from '../../src/webhooks/attempt.js';
import type { DestinationPolicy } from '../../src/webhooks/destination.js';
import { newSigningSecret, signPayload } from '../../src/webhooks/signature.js';
import { closedPort, startBlackHole, startHttpReceiver, startHttpsReceiver, type Receiver } from './receivers.js';

const STRICT: DestinationPolicy = { allowPrivate: false, allowHosts: [] };
const PRIVATE_OK: DestinationPolicy = { allowPrivate: true, allowHosts: [] };
// Short enough to keep the suite quick, long enough for a busy machine to connect locally.
const SHORT_DEADLINE_MS = 300;
// What "ended at the deadline, not whenever" means on a machine that may be very busy.
const GENEROUS_MS = 30_000;

const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'loan.created' });
const signature = signPayload({ id: 'evt_1', timestamp: 1_760_000_000, body }, [newSigningSecret(), newSigningSecret()]);
const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': '1760000000', 'webhook-signature': signature };

const receivers: Receiver[] = [];
async function started<T extends Receiver>(receiver: Promise<T>): Promise<T> {
  receivers.push(await receiver);
  return receiver;
}
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function attempt(overrides: Partial<DeliveryAttempt> & Pick<DeliveryAttempt, 'url'>): Promise<AttemptResult> {
  const result = await deliverOnce({ headers, body, policy: PRIVATE_OK, ...overrides });
  expect(result.error ?? '', 'an error text never carries the signature').not.toContain(signature.split(' ')[0]!.slice(3));
  return result;
}

/** A TCP receiver that reads the request, answers `statusLine` with an empty body, and closes. */
async function rawStatusReceiver(statusLine: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = net.createServer((socket) => {
    socket.once('data', () => socket.end(`${statusLine}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('deliverOnce', () => {
  it.each(['HTTP/1.1 999 X', 'HTTP/1.1 0 X', 'HTTP/1.1 099 Early'])('records %j as an error, never as a status outside 100–599', async (statusLine) => {
    const receiver = await rawStatusReceiver(statusLine);
    try {
      const result = await attempt({ url: receiver.url });
      expect(result).toMatchObject({ ok: false, status: null });
      expect(result.failure).not.toBeNull();
      expect(result.error).toMatch(/status/i);
    } finally {
      await receiver.close();
    }
  });

  it('POSTs the body as JSON with the webhook headers, and a 2xx is success', async () => {
    const receiver = await started(startHttpReceiver((_request, response) => response.writeHead(204).end()));
    const result = await attempt({ url: `http://127.0.0.1:${receiver.port}/hooks?org=1` });
    expect(result).toMatchObject({ ok: true, status: 204, error: null, failure: null, responseBody: '' });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(receiver.requests).toHaveLength(1);
    const [received] = receiver.requests;
    expect(received).toMatchObject({ method: 'POST', url: '/hooks?org=1', body });
    expect(received!.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': WEBHOOK_USER_AGENT,
      'webhook-id': 'evt_1',
      'webhook-timestamp': '1760000000',
      'webhook-signature': signature,
    });
  });

  it('sends attempt after attempt over one kept connection without piling listeners on it', async () => {
    const receiver = await started(startHttpReceiver((_request, response) => response.writeHead(204).end()));
    const agent = new http.Agent({ keepAlive: true });
    try {
      // More than the 10 listeners after which Node warns of a leak.
      for (let i = 0; i < 15; i += 1) expect(await attempt({ url: `http://127.0.0.1:${receiver.port}/`, agent })).toMatchObject({ ok: true });
      expect(receiver.connections).toBe(1);
      const [kept] = Object.values(agent.freeSockets).flat();
      expect(kept?.listenerCount('connect')).toBe(0);
    } finally {
      agent.destroy();
    }
  });

  it('fails on a 500 and keeps what the receiver said', async () => {
    const receiver = await started(startHttpReceiver((_request, response) => response.writeHead(500).end('database on fire')));
    const result = await attempt({ url: `http://127.0.0.1:${receiver.port}/` });
    expect(result).toMatchObject({ ok: false, status: 500, failure: 'http_status', error: 'the receiver answered 500', responseBody: 'database on fire' });
  });

  it('does not follow a redirect: the target receives nothing and the attempt fails', async () => {
    const target = await started(startHttpReceiver((_request, response) => response.writeHead(200).end()));
    const location = `http://127.0.0.1:${target.port}/stolen`;
    const redirector = await started(startHttpReceiver((_request, response) => response.writeHead(302, { location }).end()));
    const result = await attempt({ url: `http://127.0.0.1:${redirector.port}/` });
    expect(result).toMatchObject({ ok: false, status: 302, failure: 'redirect', error: `redirect not followed (302 to ${location})` });
    expect(target.connections).toBe(0);
    expect(target.requests).toEqual([]);
  });

  it('ends an attempt on a receiver that accepts the connection and never answers, at the deadline, and closes the socket', async () => {
    const blackHole = await started(startBlackHole());
    const result = await attempt({ url: `http://127.0.0.1:${blackHole.port}/`, deadlineMs: SHORT_DEADLINE_MS });
    expect(result).toMatchObject({ ok: false, status: null, failure: 'timeout', responseBody: '' });
    expect(result.error).toMatch(/^timed out after 300 ms/);
    expect(result.durationMs).toBeGreaterThanOrEqual(SHORT_DEADLINE_MS - 50);
    expect(result.durationMs).toBeLessThan(GENEROUS_MS);
    expect(blackHole.connections).toBe(1);
    await vi.waitFor(() => expect(blackHole.openSockets()).toBe(0), { timeout: GENEROUS_MS });
  });

  it('keeps an endpoint that hangs from holding up another one', async () => {
    const blackHole = await started(startBlackHole());
    const healthy = await started(startHttpReceiver((_request, response) => response.writeHead(200).end('ok')));
    const finished: string[] = [];
    await Promise.all([
      attempt({ url: `http://127.0.0.1:${blackHole.port}/`, deadlineMs: 2_000 }).then(() => finished.push('black hole')),
      attempt({ url: `http://127.0.0.1:${healthy.port}/` }).then((result) => finished.push(result.ok ? 'healthy ok' : 'healthy failed')),
    ]);
    expect(finished).toEqual(['healthy ok', 'black hole']);
  });

  it('ends a response whose body never finishes at the deadline; the 2xx status already counts', async () => {
    const slow = await started(startHttpReceiver((_request, response) => response.writeHead(200).write('accepted, ')));
    const result = await attempt({ url: `http://127.0.0.1:${slow.port}/`, deadlineMs: SHORT_DEADLINE_MS });
    expect(result).toMatchObject({ ok: true, status: 200, failure: null, responseBody: 'accepted, ' });
    expect(result.durationMs).toBeLessThan(GENEROUS_MS);

    const slowError = await started(startHttpReceiver((_request, response) => response.writeHead(503).write('busy')));
    expect(await attempt({ url: `http://127.0.0.1:${slowError.port}/`, deadlineMs: SHORT_DEADLINE_MS })).toMatchObject({
      ok: false,
      status: 503,
      failure: 'http_status',
      responseBody: 'busy',
    });
  });

  it('reads only the first 1 KiB of a response and hangs up without waiting for the rest', async () => {
    const chatty = await started(startHttpReceiver((_request, response) => response.writeHead(200).write('x'.repeat(64 * 1024))));
    const result = await attempt({ url: `http://127.0.0.1:${chatty.port}/`, deadlineMs: 120_000 });
    expect(result).toMatchObject({ ok: true, status: 200, responseBody: 'x'.repeat(1024) });
    expect(result.durationMs).toBeLessThan(GENEROUS_MS);
  });

  it('reports a refused connection', async () => {
    const result = await attempt({ url: `http://127.0.0.1:${await closedPort()}/` });
    expect(result).toMatchObject({ ok: false, status: null, failure: 'network', error: 'connection refused (ECONNREFUSED)' });
  });

  describe('SSRF', () => {
    it.each([
      ['https://127.0.0.1:PORT/', 'the URL must not point to a loopback address'],
      ['https://[::ffff:127.0.0.1]:PORT/', 'the URL must not point to a loopback address'],
      ['https://localhost:PORT/', 'the URL must not point to a loopback address'],
    ])('refuses %s without connecting', async (template, error) => {
      const receiver = await started(startBlackHole());
      const result = await attempt({ url: template.replace('PORT', String(receiver.port)), policy: STRICT });
      expect(result).toMatchObject({ ok: false, status: null, failure: 'refused_address', error });
      expect(receiver.connections).toBe(0);
    });

    it('refuses a public-looking name whose DNS answer is loopback (rebinding) without connecting', async () => {
      const receiver = await started(startBlackHole());
      const rebinding = ((_name: string, _options: unknown, callback: (error: null, addresses: LookupAddress[]) => void) =>
        callback(null, [{ address: '127.0.0.1', family: 4 }])) as never;
      const result = await attempt({ url: `https://hooks.example.com:${receiver.port}/`, policy: STRICT, resolve: rebinding });
      expect(result).toMatchObject({
        ok: false,
        status: null,
        failure: 'refused_address',
        error: 'refused to deliver to hooks.example.com: it resolves to 127.0.0.1, a loopback address',
      });
      expect(receiver.connections).toBe(0);
    });

    it.each([
      ['https://[::1]:1/', 'refused_address'],
      ['https://10.0.0.1/', 'refused_address'],
      ['https://169.254.169.254/latest/meta-data/', 'refused_address'],
      ['http://hooks.example.com/', 'invalid_url'],
      ['https://user:password@hooks.example.com/', 'invalid_url'],
    ])('refuses %s under the default policy', async (url, failure) => {
      expect(await attempt({ url, policy: STRICT })).toMatchObject({ ok: false, status: null, failure });
    });

    it('refuses cloud metadata even with allowPrivate', async () => {
      expect(await attempt({ url: 'http://169.254.169.254/latest/meta-data/', policy: PRIVATE_OK })).toMatchObject({
        failure: 'refused_address',
        error: 'the URL must not point to a cloud metadata address',
      });
    });

    it('delivers to loopback over http with allowPrivate, and to an allow-listed host', async () => {
      const receiver = await started(startHttpReceiver((_request, response) => response.writeHead(200).end()));
      expect(await attempt({ url: `http://127.0.0.1:${receiver.port}/`, policy: PRIVATE_OK })).toMatchObject({ ok: true });
      expect(await attempt({ url: `http://localhost:${receiver.port}/`, policy: { allowPrivate: false, allowHosts: ['localhost'] } })).toMatchObject({ ok: true });
      expect(receiver.requests).toHaveLength(2);
    });
  });

  describe('over TLS (a certificate made by openssl for localhost)', () => {
    it('delivers to an allow-listed host whose certificate is trusted', async () => {
      const receiver = await started(startHttpsReceiver((_request, response) => response.writeHead(200).end('tls ok')));
      const result = await attempt({ url: `https://localhost:${receiver.port}/`, policy: { allowPrivate: false, allowHosts: ['localhost'] }, ca: receiver.ca });
      expect(result).toMatchObject({ ok: true, status: 200, responseBody: 'tls ok' });
      expect(receiver.requests[0]?.body).toBe(body);
    });

    it('refuses a certificate it cannot verify, before sending anything', async () => {
      const receiver = await started(startHttpsReceiver((_request, response) => response.writeHead(200).end()));
      const result = await attempt({ url: `https://localhost:${receiver.port}/`, policy: { allowPrivate: false, allowHosts: ['localhost'] } });
      expect(result).toMatchObject({ ok: false, status: null, failure: 'tls' });
      expect(result.error).toMatch(/^TLS failed: .*self.signed/i);
      expect(receiver.requests).toEqual([]);
    });
  });
});
