import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { json, useApp, type Page } from '../helpers/app.js';
import { expectedRecords, limitRow, methodRow, queryArbitrary, rangeIsEmpty, scenarios, type Row } from '../helpers/list-model.js';
import { insertCreditLimits, insertPaymentMethods, paymentMethod, type CreditLimitRow, type PaymentMethodRow } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

interface Problem {
  code: string;
  errors: { param: string; detail: string }[];
}

function pathOf(link: string): string {
  const url = new URL(link);
  return url.pathname + url.search;
}

function cursorOf(link: string): string {
  return new URL(link).searchParams.get('cursor') ?? '';
}

describeEachStore('GET /api/{collection}/?cursor= (keyset pages)', (store) => {
  const app = useApp(store);
  let tenant: Tenant;
  const get = (url: string, who: Tenant = tenant, server: FastifyInstance = app()) => server.inject({ url, headers: { authorization: who.authorization } });

  beforeAll(async () => {
    tenant = await createTenant(store());
    // 25 records sharing one created_at (ties broken by id) and 10 more.
    const tied = Array.from({ length: 25 }, (_, i) => paymentMethod({ uid: `tie_${i}`, entity: 'ent_tied', created_at: '2024-05-01T10:00:00.123456Z' }));
    const spread = Array.from({ length: 10 }, (_, i) =>
      paymentMethod({ uid: `spread_${i}`, entity: 'ent_spread', currency: 'EUR', created_at: `2024-05-0${(i % 9) + 1}T00:00:00.000000Z` }),
    );
    await insertPaymentMethods(store(), tenant.org.id, [...tied, ...spread]);
  });

  it('walks forward to the end and back to the start with the same pages, an exact count on each', async () => {
    const forward: Page[] = [];
    let link: string | null = '/api/methods/?cursor=';
    while (link) {
      const response = await get(link.startsWith('http') ? pathOf(link) : link);
      expect(response.statusCode).toBe(200);
      const page = json<Page>(response);
      expect(page.count).toBe(35);
      forward.push(page);
      link = page.next;
    }
    expect(forward.map((page) => page.items.length)).toEqual([10, 10, 10, 5]);
    expect(forward[0]!.previous).toBeNull();
    const paged = await get('/api/methods/?page=1');
    expect(forward[0]!.items).toEqual(json<Page>(paged).items);

    const backward: Page[] = [forward.at(-1)!];
    let back = forward.at(-1)!.previous;
    while (back) {
      const page = json<Page>(await get(pathOf(back)));
      backward.unshift(page);
      back = page.previous;
    }
    expect(backward.map((page) => page.items)).toEqual(forward.map((page) => page.items));
    // The first page reached going back links forward again, to the same second page.
    expect(json<Page>(await get(pathOf(backward[0]!.next!))).items).toEqual(forward[1]!.items);
  });

  it('keeps every other parameter in the links and the Link header, and starts over at rel="first"', async () => {
    const response = await get('/api/methods/?entity=ent_tied&order_by=created_at&cursor=');
    const page = json<Page>(response);
    const next = new URL(page.next!);
    expect([...next.searchParams.keys()]).toEqual(['entity', 'order_by', 'cursor']);
    expect(next.searchParams.get('entity')).toBe('ent_tied');
    expect(response.headers.link).toContain(`<${page.next}>; rel="next"`);
    expect(response.headers.link).toContain('cursor=>; rel="first"');
    expect(response.headers.link).not.toContain('rel="prev"');
    const second = await get(pathOf(page.next!));
    expect(second.headers.link).toContain('rel="prev"');
  });

  it('answers an empty list with no links', async () => {
    const page = json<Page>(await get('/api/methods/?entity=nobody&cursor='));
    expect(page).toEqual({ count: 0, next: null, previous: null, items: [] });
  });

  it('returns 422 for cursor together with page', async () => {
    const response = await get('/api/methods/?cursor=&page=2');
    expect(response.statusCode).toBe(422);
    expect(json<Problem>(response).errors).toEqual([{ param: 'cursor', detail: expect.stringContaining('cannot be combined') }]);
  });

  it('returns 422 naming cursor for a cursor of another organization, collection, filter set or ordering', async () => {
    const next = cursorOf(json<Page>(await get('/api/methods/?entity=ent_tied&cursor=')).next!);
    const other = await createTenant(store());
    await insertPaymentMethods(store(), other.org.id, [paymentMethod({ entity: 'ent_tied' })]);
    const cases: [string, Tenant, string][] = [
      [`/api/methods/?entity=ent_tied&cursor=${next}`, other, 'another organization'],
      [`/api/limits/?entity=ent_tied&cursor=${next}`, tenant, 'issued for /api/methods/'],
      [`/api/methods/?entity=ent_spread&cursor=${next}`, tenant, 'other filters'],
      [`/api/methods/?cursor=${next}`, tenant, 'other filters'],
      [`/api/methods/?entity=ent_tied&order_by=updated_at&cursor=${next}`, tenant, 'order_by=-created_at'],
    ];
    for (const [url, who, reason] of cases) {
      const response = await get(url, who);
      expect(response.statusCode, url).toBe(422);
      const problem = json<Problem>(response);
      expect(problem.code).toBe('invalid_parameter');
      expect(problem.errors).toEqual([{ param: 'cursor', detail: expect.stringContaining(reason) }]);
    }
    // The same filters written differently (order, letter case) are the same list.
    const same = await get(`/api/methods/?order_by=-created_at&entity=ent_tied&cursor=${next}`);
    expect(same.statusCode).toBe(200);
  });

  it('returns 422 for a forged or garbled cursor', async () => {
    const next = cursorOf(json<Page>(await get('/api/methods/?cursor=')).next!);
    const [body, mac] = next.split('.') as [string, string];
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString()) as Record<string, unknown>;
    const forgedBody = Buffer.from(JSON.stringify({ ...payload, r: '1' })).toString('base64url');
    const otherFirst = mac.startsWith('A') ? 'B' : 'A';
    // 16 bytes take 22 base64url characters, the last of which carries 2 bits: each run of 16 letters of the
    // alphabet decodes alike there, so this spelling is the same MAC in bytes, but not the text issued.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(mac.slice(-1));
    const sameBytesOtherText = `${mac.slice(0, -1)}${alphabet[last - (last % 16) + ((last + 1) % 16)]}`;
    expect(Buffer.from(sameBytesOtherText, 'base64url')).toEqual(Buffer.from(mac, 'base64url'));
    const cases: [string, string][] = [
      [`${forgedBody}.${mac}`, 'altered or was not issued by this server'],
      [`${body}.${otherFirst}${mac.slice(1)}`, 'altered or was not issued by this server'],
      [`${body}.${sameBytesOtherText}`, 'altered or was not issued by this server'],
      ['not a cursor', 'garbled'],
      [body, 'garbled'],
      ['x'.repeat(5000) + '.abc', 'garbled'],
    ];
    for (const [cursor, reason] of cases) {
      const response = await get(`/api/methods/?cursor=${encodeURIComponent(cursor)}`);
      expect(response.statusCode, cursor.slice(0, 40)).toBe(422);
      expect(json<Problem>(response).errors).toEqual([{ param: 'cursor', detail: expect.stringContaining(reason) }]);
    }
  });

  describe2NodesSharingOneDatabase();

  function describe2NodesSharingOneDatabase(): void {
    let otherNode: FastifyInstance;
    beforeAll(async () => {
      otherNode = await buildApp({ store: store() });
    });
    afterAll(async () => {
      await otherNode.close();
    });

    it('accepts a cursor issued by another node of the same installation (the secret lives in the database)', async () => {
      const first = json<Page>(await get('/api/methods/?cursor='));
      const response = await get(pathOf(first.next!), tenant, otherNode);
      expect(response.statusCode).toBe(200);
      expect(json<Page>(response).items).toEqual(json<Page>(await get('/api/methods/?page=2')).items);
    });
  }

  for (const scenario of scenarios) {
    it(`walks /api/${scenario.path}/ by cursor in the model's order for random data, filters and orderings`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array((scenario.path === 'methods' ? methodRow : limitRow) as fc.Arbitrary<Record<string, string>>, { minLength: 0, maxLength: 34 }),
          queryArbitrary(scenario).filter((query) => !rangeIsEmpty(query)),
          async (generated, query) => {
            const owner = await createTenant(store());
            const rows: Row[] = generated.map((row, i) => ({ ...row, uid: `${scenario.path}_${i}`, id: String(i) }));
            if (scenario.path === 'methods') await insertPaymentMethods(store(), owner.org.id, rows as unknown as PaymentMethodRow[]);
            else await insertCreditLimits(store(), owner.org.id, rows as unknown as CreditLimitRow[]);
            const modelRows = rows.map((row) =>
              scenario.path === 'limits' ? { ...row, balance: (Number(row.capacity) - Number(row.outstanding)).toFixed(2) } : row,
            );
            const expected = expectedRecords(modelRows, query, scenario.numeric).map((row) => row.uid);

            const seen: string[] = [];
            let link: string | null = `/api/${scenario.path}/?${new URLSearchParams({ ...query, cursor: '' }).toString()}`;
            let lastPage: Page | undefined;
            while (link) {
              const response = await get(link.startsWith('http') ? pathOf(link) : link, owner);
              expect(response.statusCode).toBe(200);
              lastPage = json<Page>(response);
              expect(lastPage.count).toBe(expected.length);
              seen.push(...lastPage.items.map((item) => String(item.uid)));
              link = lastPage.next;
            }
            expect(seen).toEqual(expected);
            // And back from the last page to the start.
            const back: string[] = [];
            let previous = lastPage?.previous ?? null;
            while (previous) {
              const page = json<Page>(await get(pathOf(previous), owner));
              back.unshift(...page.items.map((item) => String(item.uid)));
              previous = page.previous;
            }
            expect([...back, ...(lastPage?.items.map((item) => String(item.uid)) ?? [])]).toEqual(expected);
          },
        ),
        { numRuns: 25 },
      );
    });
  }
});
