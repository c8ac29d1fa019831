import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { FastifyInstance } from 'fastify';
import type * as Sdk from '../../packages/client/src/index.js';
import { chromium, type Browser } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { setUpDemo } from '../../src/cli/commands/demo.js';
import type { Store } from '../../src/store/store.js';
import { openPgliteTestStore } from '../helpers/stores.js';
import { newSigningSecret } from '../../src/webhooks/signature.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const chromiumInstalled = existsSync(CHROMIUM);
const skip = !chromiumInstalled && !process.env.CI;
if (skip) console.warn(`\n⚠ SKIPPING the SDK browser test: ${CHROMIUM} is missing (apt-get install -y chromium)\n`);

// The SDK outside Node: bundled for the browser by esbuild with no Node
// built-ins available (a `node:` import or a Node global would fail the
// bundle or the page), loaded into Chromium, calling a live server.
describe.skipIf(skip)('the SDK in a browser', () => {
  let store: Store;
  let app: FastifyInstance;
  let browser: Browser;
  let baseUrl: string;
  let demo: { org: string; key: string; write_key: string };
  let bundle: string;

  beforeAll(async () => {
    const bundled = await build({
      entryPoints: [fileURLToPath(new URL('../../packages/client/src/index.ts', import.meta.url))],
      bundle: true,
      platform: 'browser',
      format: 'iife',
      globalName: 'LendingSdk',
      target: 'chrome110',
      write: false,
      logLevel: 'silent',
    });
    bundle = bundled.outputFiles[0]!.text;
    store = await openPgliteTestStore();
    demo = await setUpDemo(store);
    app = await buildApp({ store });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await store?.close();
  });

  it('lists, walks cursor pages, retrieves, reports errors, times out and draws once across a retry, with the browser’s own fetch', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // The page is served on the API's own origin, as an app behind the same host would be (no CORS involved).
    await page.route(`${baseUrl}/sdk-test`, (route) =>
      route.fulfill({ contentType: 'text/html', body: `<!doctype html><title>SDK</title><script>${bundle}</script>` }),
    );
    await page.goto(`${baseUrl}/sdk-test`);

    const result = await page.evaluate(
      async ({ org, key, writeKey }) => {
        const browserGlobals = globalThis as unknown as { LendingSdk: typeof Sdk; location: { origin: string } };
        const { LendingClient, LendingApiError } = browserGlobals.LendingSdk;
        const origin = browserGlobals.location.origin;
        const client = new LendingClient({ baseUrl: origin, organizationId: org, apiKey: key });
        const first = await client.paymentMethods.list({ currency: 'usd' });
        const walked: string[] = [];
        for await (const method of client.paymentMethods.listAll({ currency: 'usd', order_by: 'updated_at' })) walked.push(method.uid);
        const limit = await client.creditLimits.retrieve('cl_demo_03_usd');
        const missing = await client.creditLimits.retrieve('cl_missing').catch((error: unknown) => error);
        // A fetch that never answers: the per-request timeout still ends the call.
        const stuck = new LendingClient({ baseUrl: origin, organizationId: org, apiKey: key, fetch: () => new Promise<Response>(() => {}) });
        const timedOut = await stuck.paymentMethods.list({}, { timeoutMs: 50 }).catch((error: unknown) => (error as Error).name);
        // A write whose first answer is lost after the server recorded it: retried with the same generated key, drawn once.
        const keys: string[] = [];
        let attempts = 0;
        const lossy = new LendingClient({
          baseUrl: origin,
          organizationId: org,
          apiKey: writeKey,
          retry: { baseDelayMs: 1 },
          fetch: async (input, init) => {
            keys.push(init.headers['idempotency-key'] ?? '');
            const answer = await fetch(input, init);
            attempts += 1;
            if (attempts === 1) throw new TypeError('Failed to fetch');
            return answer;
          },
        });
        const before = await client.creditLimits.retrieve('cl_demo_07_usd');
        const drawn = await lossy.creditLimits.draw('cl_demo_07_usd', { amount: '12.00' });
        const after = await client.creditLimits.retrieve('cl_demo_07_usd');
        return {
          drawn: [drawn.entry.kind, keys.length, new Set(keys).size, /^[0-9a-f-]{36}$/.test(keys[0] ?? ''), Math.round((before.balance - after.balance) * 100)],
          count: first.count,
          walked,
          balance: limit.balance,
          missing: missing instanceof LendingApiError ? [missing.status, missing.code] : String(missing),
          timedOut,
          node: [typeof (globalThis as Record<string, unknown>).process, typeof (globalThis as Record<string, unknown>).Buffer],
        };
      },
      { org: demo.org, key: demo.key, writeKey: demo.write_key },
    );

    expect(errors).toEqual([]);
    expect(result.count).toBeGreaterThan(10);
    expect(result.walked).toHaveLength(result.count);
    expect(new Set(result.walked).size).toBe(result.count);
    expect(result).toMatchObject({ balance: 11750.5, missing: [404, 'not_found'], timedOut: 'TimeoutError', node: ['undefined', 'undefined'] });
    expect(result.drawn).toEqual(['drawdown', 2, 1, true, 1200]);
  }, 120_000);

  it('verifies a webhook delivery signed by standardwebhooks with the browser’s Web Crypto, and refuses a changed body', async () => {
    const page = await browser.newPage();
    await page.route(`${baseUrl}/sdk-verify`, (route) =>
      route.fulfill({ contentType: 'text/html', body: `<!doctype html><title>SDK</title><script>${bundle}</script>` }),
    );
    await page.goto(`${baseUrl}/sdk-verify`);
    const secret = newSigningSecret();
    const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'loan.created', data: { object: { uid: 'ln_1', reference: 'Zoë ✓' } } });
    const timestamp = 1_764_299_588;
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': new Webhook(secret).sign('evt_1', new Date(timestamp * 1000), body) };
    const result = await page.evaluate(
      async ({ body, headers, secret, timestamp }) => {
        const { verifyWebhook } = (globalThis as unknown as { LendingSdk: typeof Sdk }).LendingSdk;
        const event = await verifyWebhook<{ data: { object: { reference: string } } }>(body, new Headers(headers), secret, { now: timestamp });
        const refused = await verifyWebhook(body.replace('ln_1', 'ln_2'), headers, secret, { now: timestamp }).catch((error: { code: string }) => error.code);
        return { reference: event.data.object.reference, refused };
      },
      { body, headers, secret, timestamp },
    );
    expect(result).toEqual({ reference: 'Zoë ✓', refused: 'no_matching_signature' });
  }, 120_000);
});
