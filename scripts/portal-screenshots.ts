/**
 * `npm run portal:screenshots`: regenerates docs/portal/*.png, each page of the portal at 360 px and at
 * 1280 px wide (the viewport, not the whole page), on the demo: `lending-api demo --serve` on an in-memory
 * store, with one webhook endpoint pointed at a local receiver that fails, so its health shows. Needs the
 * build (`npm run build`) and Debian's Chromium.
 */
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { startPortalDemo, type PortalDemo as Demo } from './portal-demo.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const OUT = path.join(ROOT, 'docs/portal');
const WIDTHS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 360, height: 740 },
];


const basic = (demo: Demo, key: string) => `Basic ${Buffer.from(`${demo.org}:${key}`).toString('base64')}`;

async function call<T>(demo: Demo, key: string, method: string, apiPath: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(`${demo.url}${apiPath}`, {
    method,
    headers: { authorization: basic(demo, key), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${apiPath}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

async function open(page: Page, demo: Demo, key: string, pagePath: string): Promise<void> {
  const { url } = await call<{ url: string }>(demo, key, 'POST', '/api/portal_sessions/');
  await page.goto(`${demo.url}${pagePath}${new URL(url).hash}`);
  // The link is used only when the person continues (docs/portal.md "Access: sessions and links").
  await page.getByRole('button', { name: 'Continue to the portal' }).click();
  await page.getByRole('navigation', { name: 'Portal' }).waitFor();
  await page.locator('h1').waitFor();
  // Runs in the page (a function: the page's CSP refuses a string, which would be eval'd there).
  const loaded = () => !(globalThis as unknown as { document: { body: { textContent: string } } }).document.body.textContent.includes('Loading…');
  await page.waitForFunction(loaded, undefined, { timeout: 60_000 });
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const receiver = http.createServer((request, response) => {
    request.resume();
    response.writeHead(500).end('receiver down');
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const { demo, stop } = await startPortalDemo({ WEBHOOK_ALLOW_PRIVATE: '1' });
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'], headless: true });
  try {
    const endpoint = await call<{ id: string }>(demo, demo.webhooks_key, 'POST', '/api/webhook_endpoints/', {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      description: 'ledger sync',
      enabled_events: ['credit_limit.*', 'ledger_entry.created'],
    });
    await call(demo, demo.write_key, 'POST', '/api/limits/cl_demo_01_usd/drawdowns/', { amount: '1250.00', reference: 'invoice-7' }, { 'idempotency-key': crypto.randomUUID() });
    // The serving node delivers at once; its first attempt fails.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const shots: [string, string, string][] = [
      ['limits', demo.key, '/portal/'],
      ['limit', demo.key, '/portal/limits/cl_demo_01_usd/'],
      ['methods', demo.key, '/portal/methods/?currency=USD'],
      ['entities', demo.key, '/portal/entities/'],
      ['loans', demo.key, '/portal/loans/'],
      ['prepare-loan', demo.write_key, '/portal/loans/new/'],
      ['events', demo.key, '/portal/events/'],
      ['webhooks', demo.webhooks_key, '/portal/webhooks/'],
      ['endpoint', demo.webhooks_key, `/portal/webhooks/${endpoint.id}/`],
    ];
    for (const size of WIDTHS) {
      const context = await browser.newContext({ viewport: { width: size.width, height: size.height } });
      const page = await context.newPage();
      for (const [name, key, pagePath] of shots) {
        await open(page, demo, key, pagePath);
        if (name === 'prepare-loan') {
          await page.getByLabel('Entity').selectOption('ent_demo_02');
          await page.getByLabel('Currency').selectOption('USD');
          await page.getByLabel('Payment method').locator('option').nth(1).waitFor({ state: 'attached' });
          await page.getByLabel('Payment method').selectOption({ index: 1 });
          await page.getByLabel('Principal').fill('2500.00');
        }
        if (name === 'events') {
          await page.locator('tbody details summary').first().click();
        }
        const file = path.join(OUT, `${name}-${size.width}.png`);
        await page.screenshot({ path: file });
        console.log(`wrote ${path.relative(ROOT, file)}`);
      }
      await context.close();
    }
  } finally {
    await browser.close();
    stop();
    receiver.close();
  }
}

await main();
