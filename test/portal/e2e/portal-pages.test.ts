import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, basicOf, eventually, newPortalPage, publishEvents, signIn, skipBrowser, startPortal, type PortalFixture } from './portal-browser.js';

describe.skipIf(skipBrowser)('the portal’s pages, in Chromium', () => {
  let fixture: PortalFixture;
  const api = async <T>(path: string, key: string, init: RequestInit = {}): Promise<T> => {
    const response = await fetch(`${fixture.baseUrl}${path}`, { ...init, headers: { authorization: basicOf(fixture, key), ...(init.headers ?? {}) } });
    expect(response.status, await response.clone().text()).toBeLessThan(300);
    return (await response.json()) as T;
  };
  const caption = (page: Page) => page.getByRole('table').first().locator('caption').textContent();
  beforeAll(async () => {
    fixture = await startPortal();
  });
  afterAll(async () => {
    await fixture?.close();
  });

  it('lists credit limits with filters, numbered and cursor pages, the query in the address, and Back undoing each step', async () => {
    const { count } = await api<{ count: number }>('/api/limits/', fixture.demo.key);
    const { context, page, problems } = await newPortalPage(fixture);
    await signIn(fixture, page, fixture.demo.key);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Credit limits');
    await eventually(() => caption(page)).toBe(`Credit limits: ${count} in all, page 1 of ${Math.ceil(count / 10)}`);
    expect(await page.getByRole('table').locator('tbody tr').count()).toBe(10);

    await page.getByRole('navigation', { name: 'Credit limits pages' }).getByRole('link', { name: 'Next' }).click();
    await eventually(() => caption(page)).toContain('page 2 of');
    expect(new URL(page.url()).searchParams.get('page')).toBe('2');

    await page.getByLabel('Entity UID').fill('ent_demo_01');
    await page.getByLabel('Order by').selectOption('-balance');
    await page.getByRole('button', { name: 'Apply' }).click();
    const filtered = await api<{ count: number; items: { uid: string }[] }>('/api/limits/?entity=ent_demo_01&order_by=-balance', fixture.demo.key);
    await eventually(() => caption(page)).toBe(`Credit limits: ${filtered.count} in all, page 1 of 1`);
    expect(new URL(page.url()).search).toBe('?entity=ent_demo_01&order_by=-balance');
    expect(await page.locator('tbody th').allTextContents()).toEqual(filtered.items.map((item) => item.uid));

    await page.goBack();
    await eventually(() => caption(page)).toContain('page 2 of');
    expect(await page.getByLabel('Entity UID').inputValue()).toBe('');
    await page.goBack();
    await eventually(() => caption(page)).toContain('page 1 of');

    // Cursor pages: the same records, linked by the API's cursors.
    await page.getByLabel('Paging').selectOption('cursor');
    await page.getByRole('button', { name: 'Apply' }).click();
    await eventually(() => caption(page)).toBe(`Credit limits: ${count} in all, by cursor`);
    await page.getByRole('navigation', { name: 'Credit limits pages' }).getByRole('link', { name: 'Next' }).click();
    await eventually(() => new URL(page.url()).searchParams.get('cursor')).toMatch(/.+/);
    const cursorPage = await api<{ items: { uid: string }[] }>(`/api/limits/${new URL(page.url()).search}`, fixture.demo.key);
    await eventually(() => page.locator('tbody th').allTextContents()).toEqual(cursorPage.items.map((item) => item.uid));

    // A refused filter is said next to its field.
    await page.getByLabel('Created from').fill('yesterday');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByLabel('Created from').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#filter-created_from-error').textContent()).toContain("got 'yesterday'");
    expect(problems).toEqual([]);
    await context.close();
  });

  it('lists payment methods, entities, loans and events with their filters; opens a credit limit with its utilization, entries, events and chart', async () => {
    const { context, page, problems } = await newPortalPage(fixture);
    await signIn(fixture, page, fixture.demo.key, '/portal/methods/?currency=eur&order_by=type');
    const methods = await api<{ count: number; items: { uid: string }[] }>('/api/methods/?currency=eur&order_by=type', fixture.demo.key);
    await eventually(() => page.locator('tbody th').allTextContents()).toEqual(methods.items.map((item) => item.uid));
    expect(await page.getByLabel('Currency').inputValue()).toBe('eur');

    await page.getByRole('link', { name: 'Entities' }).click();
    await page.getByLabel('Country').fill('FR');
    await page.getByRole('button', { name: 'Apply' }).click();
    const entities = await api<{ count: number }>('/api/entities/?country=FR', fixture.demo.key);
    await eventually(() => caption(page)).toBe(`Entities: ${entities.count} in all, page 1 of 1`);

    await page.getByRole('link', { name: 'Loans', exact: true }).click();
    await page.getByLabel('Status').selectOption('active');
    await page.getByRole('button', { name: 'Apply' }).click();
    const loans = await api<{ count: number }>('/api/loans/?status=active', fixture.demo.key);
    await eventually(() => caption(page)).toContain(`Loans: ${loans.count} in all`);

    await page.getByRole('link', { name: 'Credit limits' }).click();
    // The loans page has an Entity UID field too: wait for the limits page.
    await page.getByRole('heading', { level: 1, name: 'Credit limits' }).waitFor();
    await page.getByLabel('Entity UID').fill('ent_demo_01');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('link', { name: 'cl_demo_01_usd' }).click();
    await page.getByRole('heading', { level: 1, name: 'Credit limit cl_demo_01_usd' }).waitFor();
    const limit = await api<{ outstanding: number; capacity: number }>('/api/limits/cl_demo_01_usd/', fixture.demo.key);
    expect(Number(await page.locator('meter').getAttribute('value'))).toBe(limit.outstanding);
    expect(await page.locator('#utilization-text').textContent()).toContain(`of ${limit.capacity.toLocaleString('en-US', { minimumFractionDigits: 2 })} USD`);
    await page.getByRole('img', { name: /Balance of cl_demo_01_usd/ }).waitFor();
    const entries = await api<{ count: number }>('/api/limits/cl_demo_01_usd/entries/', fixture.demo.key);
    await eventually(() => page.getByRole('table', { name: /Ledger entries/ }).locator('tbody tr').count()).toBe(Math.min(10, Math.max(1, entries.count)));
    await page.getByRole('table', { name: /Latest events of cl_demo_01_usd/ }).waitFor();

    await page.getByRole('link', { name: 'All events of this limit' }).click();
    await eventually(() => new URL(page.url()).search).toBe('?object=cl_demo_01_usd');
    const events = await api<{ count: number }>('/api/events/?object=cl_demo_01_usd', fixture.demo.key);
    await eventually(() => caption(page)).toContain(`Events: ${events.count} in all`);
    const firstEvent = page.locator('tbody details').first();
    await firstEvent.locator('summary').click();
    expect(JSON.parse((await firstEvent.locator('pre').textContent()) ?? '{}').object).toBe('event');
    await page.goBack();
    await page.getByRole('heading', { level: 1, name: 'Credit limit cl_demo_01_usd' }).waitFor();
    expect(problems).toEqual([]);
    await context.close();
  });

  it('shows a read session no write or webhook controls, and says so on their addresses', async () => {
    const { context, page } = await newPortalPage(fixture);
    await signIn(fixture, page, fixture.demo.key);
    const menu = page.getByRole('navigation', { name: 'Portal' });
    expect(await menu.getByRole('link').allTextContents()).toEqual(['Credit limits', 'Payment methods', 'Entities', 'Loans', 'Events']);
    // By keyboard, on a page as it loads (the session kept by the tab): the skip link first, then to the
    // content; a filter sent with Enter. (Right after Continue, focus starts where the pressed button was.)
    await page.reload();
    await menu.waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate('document.activeElement.id')).toBe('main');
    await page.getByLabel('Entity UID').focus();
    await page.keyboard.type('ent_demo_02');
    await page.keyboard.press('Enter');
    await eventually(() => new URL(page.url()).search).toBe('?entity=ent_demo_02');
    // At 360 px the menu folds behind a button.
    await page.setViewportSize({ width: 360, height: 740 });
    expect(await menu.getByRole('link', { name: 'Entities' }).isVisible()).toBe(false);
    await menu.getByRole('button', { name: 'Menu' }).click();
    expect(await menu.getByRole('button', { name: 'Menu' }).getAttribute('aria-expanded')).toBe('true');
    await menu.getByRole('link', { name: 'Entities' }).click();
    await page.getByRole('heading', { level: 1, name: 'Entities' }).waitFor();
    expect(await menu.getByRole('link', { name: 'Entities' }).isVisible()).toBe(false);
    await page.goto(`${fixture.baseUrl}/portal/loans/new/`);
    await page.getByRole('heading', { level: 1, name: 'Not available in this session' }).waitFor();
    expect(await page.getByRole('button', { name: 'Create the loan' }).count()).toBe(0);
    await page.goto(`${fixture.baseUrl}/portal/webhooks/`);
    await page.getByRole('heading', { level: 1, name: 'Not available in this session' }).waitFor();
    await context.close();
  });

  it('prepares a loan: a refusal next to its field, then one loan despite a double click', async () => {
    const before = await api<{ count: number }>('/api/loans/?credit_limit=cl_demo_02_usd', fixture.demo.key);
    const { context, page, problems } = await newPortalPage(fixture);
    await signIn(fixture, page, fixture.demo.write_key, '/portal/loans/new/');
    await page.getByLabel('Entity').selectOption('ent_demo_02');
    await page.getByLabel('Currency').selectOption('USD');
    await page.getByText(/Credit limit cl_demo_02_usd: .* available/).waitFor();
    const method = page.getByLabel('Payment method');
    await eventually(() => method.locator('option').count()).toBeGreaterThan(1);
    await method.selectOption({ index: 1 });
    await page.getByLabel('Principal').fill('999999999');
    await page.getByRole('button', { name: 'Create the loan' }).click();
    await page.locator('#loan-principal-error').waitFor();
    expect(await page.locator('#loan-principal-error').textContent()).toMatch(/balance/);
    expect(await page.getByLabel('Principal').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Principal').getAttribute('aria-describedby')).toContain('loan-principal-error');

    await page.getByLabel('Principal').fill('250.00');
    await page.getByLabel('Reference (optional)').fill('portal-double-click');
    await page.getByRole('button', { name: 'Create the loan' }).dblclick();
    await page.getByText(/Loan ln_\w+ created: 250\.00 USD on cl_demo_02_usd/).waitFor();
    const after = await api<{ count: number; items: { reference: string | null }[] }>('/api/loans/?credit_limit=cl_demo_02_usd', fixture.demo.key);
    expect(after.count).toBe(before.count + 1);
    expect(after.items.filter((loan) => loan.reference === 'portal-double-click')).toHaveLength(1);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('prepares a loan: after an answer lost to a 5xx, the same values typed again keep the key and lend once', async () => {
    const before = await api<{ count: number }>('/api/loans/?credit_limit=cl_demo_02_usd', fixture.demo.key);
    const { context, page } = await newPortalPage(fixture);
    const keys: string[] = [];
    // The first POST reaches the service (the loan is made) but its answer is lost: a 503 instead.
    await page.route('**/api/loans/', async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      keys.push(route.request().headers()['idempotency-key'] ?? '');
      if (keys.length > 1) return route.continue();
      await route.fetch();
      return route.fulfill({ status: 503, contentType: 'application/problem+json', body: JSON.stringify({ status: 503, code: 'service_unavailable', detail: 'The service is unavailable.' }) });
    });
    await signIn(fixture, page, fixture.demo.write_key, '/portal/loans/new/');
    await page.getByLabel('Entity').selectOption('ent_demo_02');
    await page.getByLabel('Currency').selectOption('USD');
    await page.getByText(/Credit limit cl_demo_02_usd: .* available/).waitFor();
    const method = page.getByLabel('Payment method');
    await eventually(() => method.locator('option').count()).toBeGreaterThan(1);
    await method.selectOption({ index: 1 });
    await page.getByLabel('Principal').fill('12.00');
    await page.getByLabel('Reference (optional)').fill('portal-lost-answer');
    await page.getByRole('button', { name: 'Create the loan' }).click();
    await page.getByText('The service is unavailable.').waitFor();
    // Edited, then the same values again: the same body, so the same key (the service replays the loan it made).
    await page.getByLabel('Principal').fill('13.00');
    await page.getByLabel('Principal').fill('12.00');
    await page.getByRole('button', { name: 'Create the loan' }).click();
    await page.getByText(/Loan ln_\w+ created: 12\.00 USD on cl_demo_02_usd/).waitFor();
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    const after = await api<{ count: number; items: { reference: string | null }[] }>('/api/loans/?credit_limit=cl_demo_02_usd', fixture.demo.key);
    expect(after.count).toBe(before.count + 1);
    expect(after.items.filter((loan) => loan.reference === 'portal-lost-answer')).toHaveLength(1);

    // After the success, other values are another loan: a new key.
    await page.getByLabel('Principal').fill('11.00');
    await page.getByRole('button', { name: 'Create the loan' }).click();
    await page.getByText(/Loan ln_\w+ created: 11\.00 USD on cl_demo_02_usd/).waitFor();
    expect(keys).toHaveLength(3);
    expect(keys[2]).not.toBe(keys[0]);
    await context.close();
  });

  it('follows the log live: a drawdown’s events appear in the tail', async () => {
    await publishEvents(fixture);
    const { context, page, problems } = await newPortalPage(fixture);
    await signIn(fixture, page, fixture.demo.key, '/portal/events/');
    await page.getByRole('button', { name: 'Start live tail' }).click();
    await page.getByText('Live tail running').waitFor();
    const drawn = await api<{ entry: { id: string } }>('/api/limits/cl_demo_03_usd/drawdowns/', fixture.demo.write_key, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `tail-${Date.now()}` },
      body: JSON.stringify({ amount: '10.00' }),
    });
    await publishEvents(fixture);
    const tail = page.getByRole('log', { name: 'Events received by the live tail' });
    // The drawdown's two events, and nothing from before the tail started.
    await eventually(async () => (await tail.locator('summary strong').allTextContents()).sort()).toEqual(['credit_limit.updated', 'ledger_entry.created']);
    expect(await tail.textContent()).toContain(drawn.entry.id);
    await page.getByRole('button', { name: 'Stop live tail' }).click();
    await page.getByText('Live tail stopped.').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  });

  it('has no serious or critical axe-core violation on any page, at 1280 and at 360 px', async () => {
    const pages: [string, string][] = [
      [fixture.demo.key, '/portal/'],
      [fixture.demo.key, '/portal/limits/cl_demo_01_usd/'],
      [fixture.demo.key, '/portal/methods/'],
      [fixture.demo.key, '/portal/entities/'],
      [fixture.demo.key, '/portal/loans/'],
      [fixture.demo.key, '/portal/events/'],
      [fixture.demo.write_key, '/portal/loans/new/'],
      [fixture.demo.webhooks_key, '/portal/webhooks/'],
    ];
    const found: string[] = [];
    for (const width of [1280, 360]) {
      const { context, page } = await newPortalPage(fixture, { width, height: 800 });
      for (const [key, path] of pages) {
        await signIn(fixture, page, key, path);
        await page.getByRole('status').filter({ hasText: 'Loading…' }).first().waitFor({ state: 'detached' }).catch(() => undefined);
        await page.locator('h1').waitFor();
        await eventually(() => page.getByText('Loading…').count()).toBe(0);
        found.push(...(await axeViolations(page)).map((violation) => `${width}px ${path}: ${violation}`));
      }
      // The signed-out page too.
      await page.evaluate('sessionStorage.clear()');
      await page.goto(`${fixture.baseUrl}/portal/`);
      await page.getByRole('heading', { name: 'Open a fresh portal link' }).waitFor();
      found.push(...(await axeViolations(page)).map((violation) => `${width}px signed out: ${violation}`));
      await context.close();
    }
    expect(found).toEqual([]);
  });
});
