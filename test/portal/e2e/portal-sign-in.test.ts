import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../../../src/auth/api-keys.js';
import { createApiKey } from '../../../src/auth/api-keys.js';
import { axeViolations, eventually, newPortalPage, openLink, portalLink, signIn, skipBrowser, startPortal, type PortalFixture } from './portal-browser.js';

describe.skipIf(skipBrowser)('the portal’s sign-in link, in Chromium', () => {
  let fixture: PortalFixture;
  beforeAll(async () => {
    fixture = await startPortal();
  });
  afterAll(async () => {
    await fixture?.close();
  });

  it('opens once: the token leaves the address at once, a reload keeps the session, and the same link is then refused in words', async () => {
    const link = await portalLink(fixture, fixture.demo.key, '/portal/methods/?currency=USD');
    const first = await newPortalPage(fixture);
    await first.page.goto(link);
    // The token leaves the address at once, but is used only when the person continues (focused, for the keyboard).
    const proceed = first.page.getByRole('button', { name: 'Continue to the portal' });
    await proceed.waitFor();
    expect(first.page.url()).toBe(`${fixture.baseUrl}/portal/methods/?currency=USD`);
    expect(await proceed.evaluate((element) => element === element.ownerDocument.activeElement)).toBe(true);
    expect(await first.page.getByText('This link works once').count()).toBe(1);
    expect(await axeViolations(first.page)).toEqual([]);
    await first.page.keyboard.press('Enter');
    await first.page.getByRole('heading', { level: 1, name: 'Payment methods' }).waitFor();
    expect(first.page.url()).toBe(`${fixture.baseUrl}/portal/methods/?currency=USD`);
    await eventually(() => first.page.getByRole('table').locator('caption').textContent()).toMatch(/Payment methods: \d+ in all/);
    await first.page.reload();
    await first.page.getByRole('table').waitFor();
    expect(await first.page.getByRole('heading', { level: 1 }).textContent()).toBe('Payment methods');

    // Nothing in history holds the token: Back leaves the portal for the blank page the tab started on.
    await first.page.goBack();
    expect(first.page.url()).toBe('about:blank');

    const second = await newPortalPage(fixture);
    await openLink(second.page, link);
    const alert = second.page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('this portal link was already used');
    expect(await second.page.getByRole('heading', { level: 1 }).textContent()).toBe('Open a fresh portal link');
    expect(await second.page.getByText('lending-api portal --org ORG').count()).toBe(1);
    expect([...first.problems, ...second.problems]).toEqual([]);
    await first.context.close();
    await second.context.close();
  });

  it('does not use the link up when it is only loaded (a link scanner running the page)', async () => {
    const link = await portalLink(fixture, fixture.demo.key);
    const scanner = await newPortalPage(fixture);
    await scanner.page.goto(link);
    await scanner.page.getByRole('button', { name: 'Continue to the portal' }).waitFor();
    await scanner.context.close();
    const person = await newPortalPage(fixture);
    await openLink(person.page, link);
    await person.page.getByRole('navigation', { name: 'Portal' }).waitFor();
    await person.context.close();
  });

  it('refuses an expired link, saying so', async () => {
    const link = await portalLink(fixture, fixture.demo.key);
    await fixture.store.query(`UPDATE portal_sessions SET link_expires_at = now() - interval '1 second' WHERE used_at IS NULL`);
    const { context, page } = await newPortalPage(fixture);
    await openLink(page, link);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('this portal link has expired');
    await context.close();
  });

  it('refuses a link whose key was revoked, and ends an open session when its key is revoked', async () => {
    const extra = await createApiKey(fixture.store, fixture.demo.org);
    const unused = await portalLink(fixture, extra.key);
    const { context, page } = await newPortalPage(fixture);
    await signIn(fixture, page, extra.key);
    await revokeApiKey(fixture.store, extra.id);

    const other = await newPortalPage(fixture);
    await openLink(other.page, unused);
    await other.page.getByRole('alert').waitFor();
    expect(await other.page.getByRole('alert').textContent()).toContain('its API key was revoked');

    // The open session's next request is refused (the auth cache may answer from memory a moment longer).
    await expect
      .poll(
        async () => {
          const entities = page.getByRole('link', { name: 'Entities' });
          if ((await entities.count()) > 0) await entities.click();
          return page.getByRole('heading', { level: 1 }).textContent();
        },
        { timeout: 60_000, interval: 1_000 },
      )
      .toBe('Open a fresh portal link');
    expect(await page.getByRole('alert').textContent()).toContain('Your session has ended');
    await context.close();
    await other.context.close();
  });

  it('signs out: the session ends on the service and is forgotten by the tab', async () => {
    const { context, page, problems } = await newPortalPage(fixture);
    await signIn(fixture, page, fixture.demo.key);
    const bearer = await page.evaluate<string>(`JSON.parse(sessionStorage.getItem('lending-api-portal-session')).session`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Open a fresh portal link' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('You have signed out');
    expect(await page.evaluate<string | null>(`sessionStorage.getItem('lending-api-portal-session')`)).toBeNull();
    const after = await fetch(`${fixture.baseUrl}/api/limits/`, { headers: { authorization: `Bearer ${bearer}` } });
    expect(after.status).toBe(401);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Open a fresh portal link' }).waitFor();
    expect(problems).toEqual([]);
    await context.close();
  });
});
