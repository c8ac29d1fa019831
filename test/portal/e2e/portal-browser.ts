import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { setUpDemo } from '../../../src/cli/commands/demo.js';
import { DEMO_ORG_UID } from '../../../src/cli/demo-data.js';
import { publishAllEvents } from '../../../src/events/publish-events.js';
import { findOrganization } from '../../../src/organizations/organizations.js';
import type { Store } from '../../../src/store/store.js';
import { buildApp } from '../../helpers/app.js';
import { openPgliteTestStore, openPostgresTestStore } from '../../helpers/stores.js';
import { basicAuthorization } from '../../helpers/tenants.js';
import { LOCAL_POLICY, TEST_BOX } from '../../webhooks/deliverer-helpers.js';

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const chromiumInstalled = existsSync(CHROMIUM);
/** On a developer's machine without Chromium the portal's browser tests are skipped, loudly; in CI they must run. */
export const skipBrowser = !chromiumInstalled && !process.env.CI;
if (skipBrowser) console.warn(`\n⚠ SKIPPING the portal's browser tests: ${CHROMIUM} is missing (apt-get install -y chromium)\n`);

/** The built portal the app serves (`npm test` builds it first: scripts/build.mjs --if-stale). */
export const PORTAL_DIRECTORY = path.resolve(import.meta.dirname, '../../../dist/portal-app');

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface Demo {
  org: string;
  /** The organization's internal id (publishing its events takes it). */
  orgId: string;
  key: string;
  key_id: string;
  write_key: string;
  write_key_id: string;
  webhooks_key: string;
  webhooks_key_id: string;
}

/** One store, one app with the demo organization and one Chromium, shared by a file's tests. */
export interface PortalFixture {
  store: Store;
  app: FastifyInstance;
  baseUrl: string;
  browser: Browser;
  demo: Demo;
  close(): Promise<void>;
}

/** PostgreSQL when DATABASE_URL names one (run the file both ways), else PGlite. */
async function openStore(): Promise<Store> {
  const url = process.env.DATABASE_URL;
  return url && /^postgres(ql)?:/.test(url) ? openPostgresTestStore(url) : openPgliteTestStore();
}

export async function startPortal(options: { frameAncestors?: string[] } = {}): Promise<PortalFixture> {
  if (!chromiumInstalled) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`);
  if (!existsSync(path.join(PORTAL_DIRECTORY, 'index.html'))) throw new Error(`${PORTAL_DIRECTORY} has no build: run npm run build`);
  const store = await openStore();
  const demo = { ...(await setUpDemo(store)), orgId: (await findOrganization(store, DEMO_ORG_UID))!.id } as unknown as Demo;
  const app = await buildApp({
    store,
    portal: { directory: PORTAL_DIRECTORY, frameAncestors: options.frameAncestors ?? [] },
    webhooks: { secretBox: TEST_BOX, destinations: LOCAL_POLICY },
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  return {
    store,
    app,
    baseUrl,
    browser,
    demo,
    close: async () => {
      await browser.close();
      await app.close();
      await store.close();
    },
  };
}

/** A one-time portal link made with `key` (POST /api/portal_sessions/, as a lender's backend would). */
export async function portalLink(fixture: PortalFixture, key: string, pagePath = '/portal/'): Promise<string> {
  const response = await fetch(`${fixture.baseUrl}/api/portal_sessions/`, { method: 'POST', headers: { authorization: basicAuthorization(fixture.demo.org, key) } });
  expect(response.status, await response.clone().text()).toBe(201);
  const { url } = (await response.json()) as { url: string };
  const link = new URL(url);
  return `${fixture.baseUrl}${pagePath}${link.hash}`;
}

/** A fresh browser context (its own sessionStorage) and page; problems (CSP refusals, console errors, other origins) collected. */
export async function newPortalPage(fixture: PortalFixture, viewport = { width: 1280, height: 900 }): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await fixture.browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of 40[1349]|status of 422/.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('request', (request) => {
    if (!request.url().startsWith(fixture.baseUrl) && !request.url().startsWith('data:')) problems.push(`outside: ${request.url()}`);
  });
  return { context, page, problems };
}

/** Opens a link as a person does: the page, then its "Continue to the portal" button (focused on load), which exchanges the token. */
export async function openLink(page: Page, link: string): Promise<void> {
  await page.goto(link);
  const proceed = page.getByRole('button', { name: 'Continue to the portal' });
  await proceed.waitFor();
  await proceed.click();
}

/** Opens a link and waits for the signed-in portal (the menu). */
export async function signIn(fixture: PortalFixture, page: Page, key: string, pagePath = '/portal/'): Promise<void> {
  await openLink(page, await portalLink(fixture, key, pagePath));
  await page.getByRole('navigation', { name: 'Portal' }).waitFor();
}

/** axe-core's serious and critical violations on the page as it is now (axe runs through DevTools, outside the page's CSP). */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  // A string, not a function: the page's DOM types are not this program's (Node's).
  const violations = await page.evaluate<{ id: string; impact: string; help: string; targets: string[] }[]>(`(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')).slice(0, 3) }));
  })()`);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} (${v.targets.join(', ')})`);
}

/** The demo's keys as Basic authorization, for checks through the API beside the browser. */
export function basicOf(fixture: PortalFixture, key: string): string {
  return basicAuthorization(fixture.demo.org, key);
}

/** Publishes the demo organization's new events into its log, as a serving node does after its writes. */
export async function publishEvents(fixture: PortalFixture): Promise<void> {
  await publishAllEvents(fixture.store, fixture.demo.orgId);
}

/** Polls until the assertion holds: generous, for a busy 2-core machine (vitest's default gives up after 1 s). */
export function eventually<T>(value: () => T | Promise<T>) {
  return expect.poll(value, { timeout: 60_000, interval: 200 });
}
