import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { encodeCursor } from '../../src/listing/cursor.js';
import { buildApp, json, type Page, useApp } from '../helpers/app.js';
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

  it('returns 422 for a forged, altered or garbled cursor', async () => {
    const next = cursorOf(json<Page>(await get('/api/methods/?cursor=')).next!);
    const bytes = Buffer.from(next, 'base64url');
    const flipped = (at: number) => {
      const copy = Buffer.from(bytes);
      copy[at] = copy[at]! ^ 0x01;
      return copy.toString('base64url');
    };
    // Encrypted for this very list, but under another installation's secret.
    const position = { direction: 'after' as const, inclusive: false, sortKey: '2024-05-01T10:00:00.123456Z', rowId: '1' };
    const foreignSecret = encodeCursor(position, { orgId: tenant.org.id, collection: 'methods', filters: [], ordering: '-created_at' }, randomBytes(32));
    // What a cursor of the previous version looked like: a readable payload and its MAC.
    const readable = Buffer.from(JSON.stringify({ v: 1, d: 'a', k: position.sortKey, r: '1' })).toString('base64url');
    const cases: [string, string][] = [
      [flipped(0), 'altered or was not issued by this server'],
      [flipped(20), 'altered or was not issued by this server'],
      [flipped(bytes.length - 1), 'altered or was not issued by this server'],
      [next.slice(0, -4), 'altered or was not issued by this server'],
      [foreignSecret, 'altered or was not issued by this server'],
      [`${readable}.${'A'.repeat(22)}`, 'older version'],
      ['not a cursor', 'garbled'],
      ['abc', 'garbled'],
      ['x'.repeat(5000), 'garbled'],
    ];
    for (const [cursor, reason] of cases) {
      const response = await get(`/api/methods/?cursor=${encodeURIComponent(cursor)}`);
      expect(response.statusCode, cursor.slice(0, 40)).toBe(422);
      expect(json<Problem>(response).errors).toEqual([{ param: 'cursor', detail: expect.stringContaining(reason) }]);
    }
  });

  it('refuses a cursor spelled differently from the link, even when it decodes to the same bytes', async () => {
    // base64url's last character carries spare bits when the length is not a multiple of 3 bytes: one of two
    // orderings whose names differ by one character gives such a cursor.
    const spellings = await Promise.all(
      ['-created_at', 'created_at'].map(async (ordering) => {
        const next = cursorOf(json<Page>(await get(`/api/methods/?order_by=${ordering}&cursor=`)).next!);
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
        const other = [...alphabet].map((last) => next.slice(0, -1) + last).find((text) => text !== next && Buffer.from(text, 'base64url').equals(Buffer.from(next, 'base64url')));
        return { ordering, next, other };
      }),
    );
    const { ordering, next, other } = spellings.find((spelling) => spelling.other !== undefined)!;
    expect((await get(`/api/methods/?order_by=${ordering}&cursor=${next}`)).statusCode).toBe(200);
    const response = await get(`/api/methods/?order_by=${ordering}&cursor=${other!}`);
    expect(response.statusCode).toBe(422);
    expect(json<Problem>(response).errors).toEqual([{ param: 'cursor', detail: expect.stringContaining('altered or was not issued by this server') }]);
  });

  it('gives away no row id, sort key or list in the cursor, and a new cursor for every answer', async () => {
    // Ids as a busy installation's shared sequence would hand out: long enough not to turn up in random bytes by chance.
    const owner = await createTenant(store());
    await store().query(
      `INSERT INTO payment_methods (id, org_id, uid, entity, type, currency, last_2, created_at, updated_at) OVERRIDING SYSTEM VALUE
       SELECT 987654321000 + n, $1, 'opaque_' || n, 'ent_opaque', 'ACH', 'USD', '42', timestamptz '2024-05-01' + n * interval '1 second', now()
         FROM generate_series(0, 10) AS n`,
      [owner.org.id],
    );
    const url = '/api/methods/?entity=ent_opaque&order_by=created_at&cursor=';
    const first = json<Page>(await get(url, owner));
    const ids = (await store().query<{ id: string }>('SELECT id::text AS id FROM payment_methods WHERE org_id = $1', [owner.org.id])).map((row) => row.id);
    expect(ids.every((id) => id.length >= 12)).toBe(true);
    const cursor = cursorOf(first.next!);
    const decoded = Buffer.from(cursor, 'base64url');
    for (const text of [...ids, String(first.items.at(-1)!.created_at).slice(0, 19), 'created_at', 'methods', 'ent_opaque']) {
      expect(cursor, text).not.toContain(text);
      expect(decoded.includes(Buffer.from(text)), text).toBe(false);
    }
    // The same position asked for twice: two cursors that cannot be compared, both of which work.
    const again = cursorOf(json<Page>(await get(url, owner)).next!);
    expect(again).not.toBe(cursor);
    const pages = await Promise.all([cursor, again].map(async (c) => json<Page>(await get(`${url}${c}`, owner)).items));
    expect(pages[0]).toEqual(pages[1]);
    expect(pages[0]!.map((item) => item.uid)).toEqual([`opaque_10`]);
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
