import { beforeAll, expect, it } from 'vitest';
import { applyLedgerEntry } from '../../src/ledger/index.js';
import { ledgerOf } from '../helpers/ledger.js';
import { allPages, json, useApp, type Page } from '../helpers/app.js';
import { importLines } from '../helpers/import-lines.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

/*
 * GET /api/limits/{uid}/entries/: a credit limit's ledger entries through the
 * list engine, with entries written the ways that exist on this branch (the
 * ledger code the CLI uses, the import) and by SQL where an HTTP write would
 * set key_id and reference.
 */

interface Entry {
  id: string;
  kind: string;
  amount: number;
  at: string;
  reference: string | null;
  key_id: string | null;
  created_at: string;
}

describeEachStore('GET /api/limits/{uid}/entries/', (store) => {
  const app = useApp(store);
  let tenant: Tenant;
  let other: Tenant;
  const get = (url: string, who: Tenant = tenant) => app().inject({ url, headers: { authorization: who.authorization } });

  beforeAll(async () => {
    tenant = await createTenant(store(), 'Alpha');
    other = await createTenant(store(), 'Beta');
    await insertCreditLimits(store(), tenant.org.id, [
      creditLimit({ uid: 'cl_busy', capacity: '1000000.00' }),
      creditLimit({ uid: 'cl_quiet', capacity: '100.00' }),
      creditLimit({ uid: 'cl_empty' }),
    ]);
    await insertCreditLimits(store(), other.org.id, [creditLimit({ uid: 'cl_beta', capacity: '100.00' })]);
    // 23 entries through the CLI's ledger code: one transaction each, so each has its own recording time.
    for (let i = 0; i < 23; i += 1) {
      await applyLedgerEntry(ledgerOf(store()), tenant.org.id, {
        kind: i % 4 === 3 ? 'repayment' : 'drawdown',
        id: `cli_${String(i).padStart(2, '0')}`,
        limit: 'cl_busy',
        amount: i % 4 === 3 ? '0.10' : '1000.05',
        at: `2024-05-${String(1 + i).padStart(2, '0')}T12:00:00Z`,
      });
    }
    await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: 'quiet_1', limit: 'cl_quiet', amount: '40.00' });
    await applyLedgerEntry(ledgerOf(store()), other.org.id, { kind: 'drawdown', id: 'beta_1', limit: 'cl_beta', amount: '7.00' });
  });

  it("lists only this limit's entries, newest recorded first, with exact amounts as JSON numbers", async () => {
    const response = await get('/api/limits/cl_busy/entries/');
    expect(response.statusCode).toBe(200);
    const page = json<Page<Entry>>(response);
    expect(page.count).toBe(23);
    expect(page.items.map((entry) => entry.id)).toEqual(['cli_22', 'cli_21', 'cli_20', 'cli_19', 'cli_18', 'cli_17', 'cli_16', 'cli_15', 'cli_14', 'cli_13']);
    expect(page.items[3]).toEqual({
      id: 'cli_19',
      kind: 'repayment',
      amount: 0.1,
      at: '2024-05-20T12:00:00.000000Z',
      reference: null,
      loan: null,
      key_id: null,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
    });
    expect(response.body).toContain('"amount":1000.05');
    expect(page.next).toBe('http://localhost:80/api/limits/cl_busy/entries/?page=2');
    expect(response.headers.link).toContain('<http://localhost:80/api/limits/cl_busy/entries/?page=2>; rel="next"');
    const createdAt = page.items.map((entry) => entry.created_at);
    expect([...createdAt].sort().reverse()).toEqual(createdAt);
  });

  it('pages by number to the last page, and a page past it is a 404 naming the last', async () => {
    const pages = await allPages(app(), '/api/limits/cl_busy/entries/?order_by=at', tenant.authorization);
    expect(pages.map((page) => page.items.length)).toEqual([10, 10, 3]);
    expect(pages.flatMap((page) => page.items.map((item) => item.id))).toEqual(Array.from({ length: 23 }, (_, i) => `cli_${String(i).padStart(2, '0')}`));
    const past = await get('/api/limits/cl_busy/entries/?page=4');
    expect(past.statusCode).toBe(404);
    expect(json(past)).toMatchObject({ code: 'page_out_of_range', last_page: 3, count: 23 });
  });

  it('walks by cursor, forwards and back, and a cursor continues only the limit it came from', async () => {
    const forward = await allPages(app(), '/api/limits/cl_busy/entries/?cursor=', tenant.authorization);
    const ids = forward.flatMap((page) => page.items.map((item) => item.id));
    expect(ids).toHaveLength(23);
    expect(new Set(ids).size).toBe(23);
    expect(forward.every((page) => page.count === 23)).toBe(true);

    const second = json<Page<Entry>>(await get(new URL(forward[0]!.next!).pathname + new URL(forward[0]!.next!).search));
    const back = json<Page<Entry>>(await get(new URL(second.previous!).pathname + new URL(second.previous!).search));
    expect(back.items.map((item) => item.id)).toEqual(forward[0]!.items.map((item) => item.id));

    const cursor = new URL(forward[0]!.next!).searchParams.get('cursor')!;
    const elsewhere = await get(`/api/limits/cl_quiet/entries/?cursor=${encodeURIComponent(cursor)}`);
    expect(elsewhere.statusCode).toBe(422);
    expect(json(elsewhere)).toMatchObject({
      code: 'invalid_parameter',
      errors: [{ param: 'cursor', detail: expect.stringContaining('issued for /api/limits/cl_busy/entries/, not /api/limits/cl_quiet/entries/') }],
    });
    const otherOrg = await get(`/api/limits/cl_beta/entries/?cursor=${encodeURIComponent(cursor)}`, other);
    expect(otherOrg.statusCode).toBe(422);
    expect(json(otherOrg)).toMatchObject({ errors: [{ param: 'cursor', detail: expect.stringContaining('another organization') }] });
  });

  it('filters by created_from/_to and at_from/_to, and reports bad parameters naming the nested path', async () => {
    const atRange = json<Page<Entry>>(await get('/api/limits/cl_busy/entries/?at_from=2024-05-03&at_to=2024-05-05&order_by=at'));
    expect(atRange.items.map((item) => item.id)).toEqual(['cli_02', 'cli_03', 'cli_04']);
    const all = json<Page<Entry>>(await get('/api/limits/cl_busy/entries/?order_by=created_at'));
    const fifth = all.items[4]!.created_at;
    const since = json<Page<Entry>>(await get(`/api/limits/cl_busy/entries/?created_from=${encodeURIComponent(fifth)}`));
    expect(since.count).toBe(19);
    const until = json<Page<Entry>>(await get(`/api/limits/cl_busy/entries/?created_to=${encodeURIComponent(fifth)}`));
    expect(until.count).toBe(5);

    const bad = await get('/api/limits/cl_busy/entries/?created_from=yesterday&entity=ent_1&order_by=amount');
    expect(bad.statusCode).toBe(422);
    expect(bad.headers['content-type']).toContain('application/problem+json');
    const errors = json<{ errors: { param: string; detail: string }[] }>(bad).errors;
    expect(errors.map((error) => error.param)).toEqual(['created_from', 'entity', 'order_by']);
    expect(errors[1]!.detail).toContain('not a parameter of /api/limits/{uid}/entries/; accepted parameters are created_from, created_to, at_from, at_to, order_by, page, cursor');
    expect(errors[2]!.detail).toContain('order_by must be one of created_at, at');
  });

  it("answers an unknown limit and another organization's limit with a 404 naming the limit, never its entries", async () => {
    for (const [uid, who] of [['cl_nowhere', tenant], ['cl_beta', tenant], ['cl_busy', other]] as const) {
      const response = await get(`/api/limits/${uid}/entries/`, who);
      expect(response.statusCode, uid).toBe(404);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(json(response)).toMatchObject({ code: 'not_found', detail: `no credit limit with uid '${uid}'` });
      expect(response.body).not.toContain('beta_1');
      expect(response.body).not.toContain('cli_');
    }
    const own = json<Page<Entry>>(await get('/api/limits/cl_beta/entries/', other));
    expect(own.items.map((item) => item.id)).toEqual(['beta_1']);
  });

  it('answers an empty page for a limit with no entries', async () => {
    const response = await get('/api/limits/cl_empty/entries/');
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ count: 0, next: null, previous: null, items: [] });
  });

  it('shows the key that wrote an entry and its reference', async () => {
    await store().query(
      `INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference)
       SELECT $1, 'http_1', id, 'drawdown', 12.34, '2024-06-01T00:00:00Z', $2, 'loan-8812' FROM credit_limits WHERE org_id = $1 AND uid = 'cl_quiet'`,
      [tenant.org.id, tenant.keyId],
    );
    const page = json<Page<Entry>>(await get('/api/limits/cl_quiet/entries/'));
    expect(page.items).toEqual([
      expect.objectContaining({ id: 'http_1', amount: 12.34, key_id: tenant.keyId, reference: 'loan-8812' }),
      expect.objectContaining({ id: 'quiet_1', amount: 40, key_id: null, reference: null }),
    ]);
  });

  it('lists the entries of one import, which share a recording time, in reverse file order (newest first)', async () => {
    const importer = await createTenant(store(), 'Importer');
    // File order is not the ids' order: ties are broken by the order of recording, not by id.
    const fileOrder = Array.from({ length: 12 }, (_, i) => `imp_${String((i * 5) % 12).padStart(2, '0')}`);
    const lines = [
      { object: 'credit_limit', uid: 'cl_imp', entity: 'ent_1', currency: 'USD', capacity: '50000.00', rate: '0.0005', created_at: '2024-05-01T10:00:00Z' },
      ...fileOrder.map((id) => ({ object: 'drawdown', id, limit: 'cl_imp', amount: '1.00', at: '2024-05-02T00:00:00Z' })),
    ];
    await importLines(store(), importer.org.uid, lines);
    const pages = await allPages(app(), '/api/limits/cl_imp/entries/', importer.authorization);
    const items = pages.flatMap((page) => page.items as unknown as Entry[]);
    expect(new Set(items.map((item) => item.created_at)).size).toBe(1);
    expect(items.map((item) => item.id)).toEqual([...fileOrder].reverse());
    const cursorWalk = await allPages(app(), '/api/limits/cl_imp/entries/?order_by=at&cursor=', importer.authorization);
    expect(cursorWalk.flatMap((page) => page.items.map((item) => item.id))).toEqual(fileOrder);
  });

  it('answers other methods with 405 and Allow: GET, HEAD', async () => {
    const response = await app().inject({ method: 'DELETE', url: '/api/limits/cl_busy/entries/', headers: { authorization: tenant.authorization } });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe('GET, HEAD');
  });
});
