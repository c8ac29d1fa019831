import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newDeliverer } from '../../webhooks/deliverer-helpers.js';
import { axeViolations, basicOf, eventually, newPortalPage, publishEvents, signIn, skipBrowser, startPortal, type PortalFixture } from './portal-browser.js';

/** A loopback HTTP server answering every request with `answer()`. */
async function listen(answer: (request: http.IncomingMessage) => { status: number; type: string; body: string }): Promise<{ server: Server; origin: string }> {
  const server = http.createServer((request, response) => {
    request.resume();
    const { status, type, body } = answer(request);
    response.writeHead(status, { 'content-type': type }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe.skipIf(skipBrowser)('the portal’s webhook pages and its framing, in Chromium', () => {
  let fixture: PortalFixture;
  const receiver = { status: 500 };
  const servers: Server[] = [];
  let receiverUrl: string;
  let allowedParent: string;
  let otherParent: string;
  const framingPage = () => ({ status: 200, type: 'text/html', body: `<!doctype html><title>dashboard</title><iframe title="portal" src="${fixture.baseUrl}/portal/"></iframe>` });

  beforeAll(async () => {
    const hook = await listen(() => ({ status: receiver.status, type: 'text/plain', body: `answered ${receiver.status}` }));
    const allowed = await listen(framingPage);
    const other = await listen(framingPage);
    servers.push(hook.server, allowed.server, other.server);
    receiverUrl = `${hook.origin}/hooks`;
    allowedParent = allowed.origin;
    otherParent = other.origin;
    fixture = await startPortal({ frameAncestors: [allowedParent] });
  });
  afterAll(async () => {
    await fixture?.close();
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
  });

  const drawdown = async (amount: string) => {
    const response = await fetch(`${fixture.baseUrl}/api/limits/cl_demo_04_usd/drawdowns/`, {
      method: 'POST',
      headers: { authorization: basicOf(fixture, fixture.demo.write_key), 'content-type': 'application/json', 'idempotency-key': `portal-hook-${Date.now()}-${amount}` },
      body: JSON.stringify({ amount }),
    });
    expect(response.status, await response.text()).toBe(201);
    await publishEvents(fixture);
  };
  const badge = (page: Page) => page.locator('.health .badge').first();

  it('adds an endpoint (secret shown once), shows it failing in red, then, receiver fixed, replays what failed and shows it delivered', async () => {
    const { context, page, problems } = await newPortalPage(fixture);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: fixture.baseUrl });
    await signIn(fixture, page, fixture.demo.webhooks_key, '/portal/webhooks/');
    await page.getByLabel('URL').fill(receiverUrl);
    await page.getByLabel('Description (optional)').fill('ledger sync');
    await page.getByLabel('Events').fill('credit_limit.*, ledger_entry.created');
    await page.getByRole('button', { name: 'Add the endpoint' }).click();
    const secret = page.getByRole('region', { name: 'Signing secret, shown once' });
    const secretText = (await secret.locator('code').textContent()) ?? '';
    expect(secretText).toMatch(/^whsec_/);
    await secret.getByRole('button', { name: 'Copy the secret' }).click();
    await secret.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secretText);
    await secret.getByRole('button', { name: 'I have stored it' }).click();
    await eventually(() => page.getByText(secretText).count()).toBe(0);

    await page.getByRole('link', { name: receiverUrl }).click();
    await page.getByRole('heading', { level: 1, name: `Endpoint ${receiverUrl}` }).waitFor();
    expect(await badge(page).textContent()).toBe('No attempts yet');

    await drawdown('5.00');
    await newDeliverer(fixture.store).deliverDue();
    await page.reload();
    await eventually(() => badge(page).textContent()).toBe('Failing');
    // Runs in the page: getComputedStyle is the page's (this program has Node's types, not the DOM's).
    type Styled = { getComputedStyle: (element: unknown) => { backgroundColor: string } };
    expect(await badge(page).evaluate((element: unknown) => (globalThis as unknown as Styled).getComputedStyle(element).backgroundColor)).toBe('rgb(179, 38, 30)');
    await page.getByRole('img', { name: /Attempts in 24 hours: 0 succeeded, 2 failed/ }).waitFor();
    await page.getByLabel('Failed only').check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await eventually(() => new URL(page.url()).search).toBe('?status=failed');
    const attempts = page.getByRole('table', { name: /Attempts matching/ });
    await eventually(() => attempts.locator('tbody tr').count()).toBe(2);
    expect(await attempts.locator('td.failed').count()).toBe(2);
    await page.getByLabel('Event type').fill('ledger_entry.*');
    await page.getByRole('button', { name: 'Apply' }).click();
    await eventually(() => attempts.locator('tbody tr').count()).toBe(1);
    expect(await attempts.locator('tbody td').nth(0).textContent()).toBe('ledger_entry.created');

    // The outage: the developer disables the endpoint (its retries stop), fixes the receiver, tests it, enables it and replays.
    await page.getByRole('button', { name: 'Disable' }).click();
    await eventually(() => badge(page).textContent()).toBe('Disabled');
    receiver.status = 204;
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await page.getByText('Test event delivered: the receiver answered 204').waitFor();
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByText('Endpoint enabled.').waitFor();
    await page.getByRole('button', { name: 'Replay what failed' }).click();
    await page.getByText('2 failed events queued again.').waitFor();
    await newDeliverer(fixture.store).deliverDue();
    await page.goto(`${fixture.baseUrl}${new URL(page.url()).pathname}`);
    await eventually(() => badge(page).textContent()).toBe('Healthy');
    await page.getByRole('img', { name: /Attempts in 24 hours: 2 succeeded, 2 failed/ }).waitFor();
    // The attempts load on their own, after the endpoint.
    await eventually(() => page.getByRole('table', { name: /Attempts page 1/ }).locator('td.ok').count()).toBe(2);
    expect(await axeViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('edits, resends one, rotates the secret and deletes an endpoint after a confirmation', async () => {
    const url = `${receiverUrl}/second`;
    const created = await fetch(`${fixture.baseUrl}/api/webhook_endpoints/`, {
      method: 'POST',
      headers: { authorization: basicOf(fixture, fixture.demo.webhooks_key), 'content-type': 'application/json' },
      body: JSON.stringify({ url, enabled_events: ['ledger_entry.*'] }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const { id } = (await created.json()) as { id: string };
    await drawdown('1.00');
    await newDeliverer(fixture.store).deliverDue();

    const { context, page, problems } = await newPortalPage(fixture);
    await signIn(fixture, page, fixture.demo.webhooks_key, '/portal/webhooks/');
    await page.getByRole('link', { name: url }).click();
    await page.getByLabel('Description').fill('second, edited');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Endpoint saved.').waitFor();
    expect(await page.getByLabel('Description').inputValue()).toBe('second, edited');
    await page.getByRole('button', { name: /^Resend event evt_/ }).first().click();
    await page.getByText(/Event evt_\w+ queued for this endpoint again\./).waitFor();
    await page.getByRole('button', { name: 'Rotate the secret' }).click();
    expect(await page.getByRole('region', { name: 'Signing secret, shown once' }).locator('code').textContent()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Yes, delete the endpoint' }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhook endpoints' }).waitFor();
    await page.getByRole('table').waitFor();
    expect(await page.getByRole('link', { name: url }).count()).toBe(0);
    const gone = await fetch(`${fixture.baseUrl}/api/webhook_endpoints/${id}/`, { headers: { authorization: basicOf(fixture, fixture.demo.webhooks_key) } });
    expect(gone.status).toBe(404);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('may be framed by an origin of PORTAL_FRAME_ANCESTORS, and by no other', async () => {
    const { context, page } = await newPortalPage(fixture);
    const portalFrame = () => page.frames().find((frame) => frame !== page.mainFrame());
    await page.goto(`${allowedParent}/`);
    await eventually(() => portalFrame()?.locator('h1').textContent().catch(() => null)).toBe('Open a fresh portal link');

    await page.goto(`${otherParent}/`);
    await page.waitForLoadState('load');
    await eventually(() => portalFrame()?.url()).toMatch(/^chrome-error:/);
    expect(await portalFrame()!.getByText('Open a fresh portal link').count()).toBe(0);
    await context.close();
  });
});
