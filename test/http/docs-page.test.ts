import { existsSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { setUpDemo } from '../../src/cli/commands/demo.js';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';
import { GENERATED_IDEMPOTENCY_KEY } from '../../src/openapi/reference-page-document.js';
import { collectionPathOf } from '../../src/listing/resource-definition.js';
import { RESOURCES } from '../../src/resources/index.js';
import { openPgliteTestStore } from '../helpers/stores.js';
import type { Store } from '../../src/store/store.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const chromiumInstalled = existsSync(CHROMIUM);
// On a developer's machine without Chromium the test is skipped, loudly; in CI it must run.
const skip = !chromiumInstalled && !process.env.CI;
if (skip) console.warn(`\n⚠ SKIPPING the /docs browser test: ${CHROMIUM} is missing (apt-get install -y chromium)\n`);

type ListParameter = { name: string };
const documentPaths = lendingApiDocument().paths as Record<string, { get: { parameters?: ListParameter[] } }>;

/** Operations a webhooks-scoped key calls (the demo's write key gets 403 insufficient_scope there). */
function needsWebhooksScope(path: string, method: string): boolean {
  const operation = (lendingApiDocument().paths as Record<string, Record<string, { 'x-required-scope'?: string }>>)[path]?.[method];
  return operation?.['x-required-scope'] === 'webhooks';
}

/** Every operation that does something (those that only answer 405 are not on the page). */
function realOperations(): { path: string; method: string }[] {
  // The methods a path does not serve are its x-methods-not-allowed, not operations.
  return Object.entries(lendingApiDocument().paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => !key.startsWith('x-'))
      .map((method) => ({ path, method })),
  );
}

describe.skipIf(skip)('GET /docs in headless Chromium', () => {
  let store: Store;
  let app: FastifyInstance;
  let browser: Browser;
  let baseUrl: string;
  let demo: { org: string; key: string; write_key: string; write_key_id: string };

  beforeAll(async () => {
    if (!chromiumInstalled) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`);
    store = await openPgliteTestStore();
    demo = await setUpDemo(store);
    app = await buildApp({ store });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await store?.close();
  });

  it('shows every operation, and a list operation with all its parameters, loading nothing from outside the server', async () => {
    const page = await browser.newPage();
    const outside: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => {
      const url = request.url();
      if (!url.startsWith(baseUrl) && !url.startsWith('data:')) outside.push(url);
    });
    page.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });

    await page.goto(`${baseUrl}/docs`);
    await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
    await expect.poll(() => page.locator('.info .title').textContent()).toContain('lending-api');

    // Every operation on the page, read at once (one look however many collections there are).
    const shownOperations = await page.locator('.opblock').evaluateAll((blocks) =>
      blocks.map((block) => `${block.querySelector('.opblock-summary-method')?.textContent?.toLowerCase()} ${block.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`),
    );
    // The top-level webhooks (one per event type) are shown as operations too, named by their type.
    const webhookTypes = Object.keys((lendingApiDocument() as { webhooks?: Record<string, unknown> }).webhooks ?? {});
    expect(webhookTypes.length).toBeGreaterThan(0);
    expect(shownOperations.sort()).toEqual([...realOperations().map(({ path, method }) => `${method} ${path}`), ...webhookTypes.map((type) => `post ${type}`)].sort());

    // One list of each kind opened in the browser: Swagger UI renders every list's parameters the same way,
    // from the document it loads, which is checked for every list below.
    const [topLevel] = RESOURCES.filter((resource) => !resource.parent);
    const nested = RESOURCES.find((resource) => resource.parent);
    for (const resource of [topLevel, nested]) {
      if (!resource) continue;
      const path = `/api/${collectionPathOf(resource)}/`;
      const operation = page.locator(`.opblock-get:has(.opblock-summary-path[data-path="${path}"])`);
      await operation.locator('.opblock-summary').click();
      const names = operation.locator('.parameters .parameter__name');
      await names.first().waitFor();
      const shown = (await names.allTextContents()).map((text) => text.replace(/\*.*$/s, '').trim());
      const documented = (documentPaths[path]?.get.parameters ?? []).map((parameter) => parameter.name);
      expect(documented.length).toBeGreaterThan(3);
      expect(shown, `parameters shown for GET ${path}`).toEqual(documented);
    }
    const served = (await (await fetch(`${baseUrl}/docs/json`)).json()) as { paths: typeof documentPaths };
    for (const resource of RESOURCES) {
      const path = `/api/${collectionPathOf(resource)}/`;
      expect(served.paths[path]?.get.parameters, `parameters the page gets for GET ${path}`).toEqual(documentPaths[path]?.get.parameters);
    }

    expect(outside, 'requests to other hosts').toEqual([]);
    expect(problems).toEqual([]);
  });

  it('answers Authorize with the demo write key, then "Try it out" → Execute on a read of each kind and every write: 200 for reads, 201 for writes sent with an Idempotency-Key and a JSON body; every other read answers 200 as the page sends it', async () => {
    const page = await browser.newPage();
    await page.goto(`${baseUrl}/docs`);
    await page.locator('.opblock').first().waitFor({ timeout: 20_000 });

    await page.locator('.scheme-container button.authorize').click();
    // The Basic scheme's form (the dialog also offers the portal's bearer session).
    const modal = page.locator('.modal-ux');
    const basic = modal.locator('.auth-container', { hasText: 'basicAuth' });
    await basic.locator('input[type="text"]').fill(demo.org);
    // A write key: it reads too, and may POST.
    await basic.locator('input[type="password"]').fill(demo.write_key);
    await basic.locator('button.modal-btn.auth.authorize').click();
    await basic.locator('button.btn-done').click();

    // In the browser: every write, and one read of each kind (a list, a nested list, a record); the other
    // reads, which the page builds the same way, are sent below as the page would send them.
    const all = realOperations();
    // The ledger's writes (Idempotency-Key, write scope): endpoints and resends need a webhooks key, and have tests of their own, as portal links do.
    const writes = all.filter(({ method, path }) => method === 'post' && !needsWebhooksScope(path, method) && !path.startsWith('/api/portal_sessions/'));
    const firstRead = (kind: (path: string) => boolean) => all.find(({ path, method }) => method === 'get' && path.startsWith('/api/') && path !== '/api/openapi.json' && kind(path));
    const chosenReads = [
      firstRead((path) => !path.includes('{uid}')),
      firstRead((path) => /\{uid\}\/$/.test(path)),
      firstRead((path) => /\{uid\}\/[a-z]+\/$/.test(path)),
    ].filter((operation) => operation !== undefined);
    expect(chosenReads).toHaveLength(3);
    const operations = [...chosenReads, ...writes];
    const answered: string[] = [];
    for (const { path, method } of operations) {
      const operation = page.locator(`.opblock-${method}:has(.opblock-summary-path[data-path="${path}"])`);
      await operation.locator('.opblock-summary').click();
      await operation.locator('button.try-out__btn').click();
      if (method === 'post') {
        // Pre-filled: the page sends a fresh UUID in its place with each Execute.
        await expect.poll(() => operation.locator('tr[data-param-name="Idempotency-Key"] input').inputValue()).toBe(GENERATED_IDEMPOTENCY_KEY);
        // A loan is created with the example /docs pre-fills (the demo's limit and method); an entry's body is typed.
        if (path !== '/api/loans/') await operation.locator('.body-param textarea').fill('{"amount": "12.34", "reference": "from /docs"}');
      }
      await operation.locator('button.execute').click();
      const status = operation.locator('.live-responses-table .response .response-col_status').first();
      await status.waitFor({ timeout: 30_000 }).catch((error: unknown) => {
        throw new Error(`no response shown for ${method.toUpperCase()} ${path} after ${answered.join('; ') || 'nothing'}`, { cause: error });
      });
      answered.push(`${method.toUpperCase()} ${path} ${(await status.textContent())?.trim()}`);
      await operation.locator('.opblock-summary').click();
    }
    expect(answered).toEqual(operations.map(({ path, method }) => `${method.toUpperCase()} ${path} ${method === 'post' ? 201 : 200}`));

    // The other reads, with the values the page pre-fills (a record's example uid) and the key it authorized.
    const pageDocument = (await (await fetch(`${baseUrl}/docs/json`)).json()) as { paths: Record<string, { get?: { parameters?: { name?: string; in?: string; example?: unknown; $ref?: string }[] } }> };
    const authorization = `Basic ${Buffer.from(`${demo.org}:${demo.write_key}`).toString('base64')}`;
    const [firstEvent] = ((await (await fetch(`${baseUrl}/api/events/`, { headers: { authorization } })).json()) as { items: { id: string }[] }).items;
    expect(firstEvent, 'the demo data has events').toBeDefined();
    const otherReads = all.filter(({ method, path }) => method === 'get' && !needsWebhooksScope(path, method) && !operations.some((chosen) => chosen.path === path && chosen.method === 'get'));
    for (const { path } of otherReads) {
      // An event's example id is not one of the demo's events: the page's user would take one from the list.
      const uid = path === '/api/events/{uid}/' ? firstEvent?.id : pageDocument.paths[path]?.get?.parameters?.find((parameter) => parameter.name === 'uid')?.example;
      const url = path.replace('{uid}', String(uid));
      const response = await fetch(`${baseUrl}${url}`, { headers: { authorization } });
      expect(`GET ${path} ${response.status}`).toBe(`GET ${path} 200`);
    }
    expect(operations.filter(({ method }) => method === 'post').map(({ path }) => path)).toEqual([
      '/api/loans/',
      '/api/limits/{uid}/drawdowns/',
      '/api/limits/{uid}/repayments/',
      '/api/loans/{uid}/repayments/',
    ]);

    // Recorded with the key and the body typed into the page: 12.34 drawn, then 12.34 repaid, by the write key.
    const entries = await store.query<{ kind: string; amount: string; key_id: string }>(
      `SELECT kind, amount::text AS amount, key_id FROM ledger_entries WHERE reference = 'from /docs' ORDER BY recorded_at, kind`,
    );
    expect(entries).toEqual([
      { kind: 'drawdown', amount: '12.34', key_id: demo.write_key_id },
      { kind: 'repayment', amount: '12.34', key_id: demo.write_key_id },
      { kind: 'repayment', amount: '12.34', key_id: demo.write_key_id },
    ]);
    const [loan] = await store.query<{ principal: string; entries: string }>(
      `SELECT l.principal::text AS principal, (SELECT count(*) FROM ledger_entries e WHERE e.loan = l.uid)::text AS entries FROM loans l WHERE l.reference = 'loan-2024-0042'`,
    );
    expect(loan).toEqual({ principal: '500.00', entries: '1' });
    // Each Execute sent a fresh UUID, not the pre-filled text (one per POST: the loan, the two entries, the loan's repayment).
    const keys = await store.query<{ idempotency_key: string }>(`SELECT idempotency_key FROM idempotency_keys ORDER BY created_at`);
    expect(keys).toHaveLength(4);
    for (const { idempotency_key: key } of keys) expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(keys.map(({ idempotency_key: key }) => key)).size).toBe(4);
  }, 180_000);
});
