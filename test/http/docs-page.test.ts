import { existsSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';
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

describe.skipIf(skip)('GET /docs in headless Chromium', () => {
  let store: Store;
  let app: FastifyInstance;
  let browser: Browser;
  let baseUrl: string;

  beforeAll(async () => {
    if (!chromiumInstalled) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`);
    store = await openPgliteTestStore();
    app = await buildApp({ store });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await store?.close();
  });

  it('shows every list operation with all its parameters, loading nothing from outside the server', async () => {
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

    for (const resource of RESOURCES) {
      const path = `/api/${resource.path}/`;
      const operation = page.locator(`.opblock-get:has(.opblock-summary-path[data-path="${path}"])`);
      await expect.poll(() => operation.count(), { message: path }).toBe(1);
      await operation.locator('.opblock-summary').click();
      const names = operation.locator('.parameters .parameter__name');
      await names.first().waitFor();
      const shown = (await names.allTextContents()).map((text) => text.replace(/\*.*$/s, '').trim());
      const documented = (documentPaths[path]?.get.parameters ?? []).map((parameter) => parameter.name);
      expect(documented.length).toBeGreaterThan(3);
      expect(shown, `parameters shown for GET ${path}`).toEqual(documented);
    }

    expect(outside, 'requests to other hosts').toEqual([]);
    expect(problems).toEqual([]);
  });
});
