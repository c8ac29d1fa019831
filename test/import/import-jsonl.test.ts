import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { Readable } from 'node:stream';
import { ImportError, importJsonl } from '../../src/import/index.js';
import { describeEachStore, distributedOnCitus } from '../helpers/stores.js';
import { databaseNow, dumpAllTables, importLines, SAMPLE_LINES } from '../helpers/import-lines.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import type { Store } from '../../src/store/store.js';
import { RESOURCES } from '../../src/resources/index.js';

/** Every collection's import object (in the order of RESOURCES), then the ledger's kinds. */
const IMPORTABLE_OBJECTS = [...RESOURCES.flatMap((resource) => (resource.importLine ? [resource.importLine.object] : [])), 'drawdown', 'repayment'];

async function getJson(store: Store, tenant: Tenant, url: string) {
  const app = await buildApp({ store });
  const response = await app.inject({ method: 'GET', url, headers: { authorization: tenant.authorization } });
  await app.close();
  return { status: response.statusCode, body: response.json() };
}

describeEachStore('importJsonl', (store, kind) => {
  describe('happy path', () => {
    it('creates payment methods and credit limits and applies ledger lines', async () => {
      const tenant = await createTenant(store());

      const summary = await importLines(store(), tenant.org.uid, SAMPLE_LINES);

      expect(summary).toMatchObject({
        lines: 4,
        inserted: 2,
        updated: 0,
        unchanged: 0,
        collections: { payment_methods: { inserted: 1, updated: 0, unchanged: 0 }, credit_limits: { inserted: 1, updated: 0, unchanged: 0 } },
        ledger_entries: { applied: 2, unchanged: 0 },
      });
      const method = await getJson(store(), tenant, '/api/methods/pm_1/');
      expect(method.body).toEqual({
        uid: 'pm_1',
        entity: 'ent_1',
        type: 'ACH',
        currency: 'USD',
        last_2: '89',
        created_at: '2024-05-01T10:00:00.123456Z',
        updated_at: '2024-05-02T08:00:00.000000Z',
      });
      const limit = await getJson(store(), tenant, '/api/limits/cl_1/');
      expect(limit.body).toMatchObject({ capacity: 50000, outstanding: 1000, balance: 49000, rate: 0.0005, created_at: '2024-05-01T10:00:00.000000Z' });
    });

    it('accepts amounts as JSON numbers, timestamps in every query-parameter form, any-case currency, blank lines and CRLF', async () => {
      const tenant = await createTenant(store());
      const lines = [
        '{"object":"credit_limit","uid":"cl_n","entity":"e","currency":"eur","capacity":1000.5,"rate":5e-4,"created_at":"2024-05-01 12:00:00+02:00","updated_at":"2024-05-02"}\r',
        '',
        '   ',
        '{"object":"drawdown","id":"dd_n","limit":"cl_n","amount":0.1,"at":"2024-06-01T00:00:00.1234564Z"}\r',
      ];
      await importLines(store(), tenant.org.uid, lines);
      const limit = await getJson(store(), tenant, '/api/limits/cl_n/');
      expect(limit.body).toMatchObject({
        currency: 'EUR',
        capacity: 1000.5,
        outstanding: 0.1,
        balance: 1000.4,
        rate: 0.0005,
        created_at: '2024-05-01T10:00:00.000000Z',
      });
      const [entry] = await store().query<{ at: string }>(
        `SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at FROM ledger_entries WHERE id = 'dd_n'`,
      );
      expect(entry?.at).toBe('2024-06-01T00:00:00.123457Z');
    });

    it('generates uids and ledger ids that are absent', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, [
        { object: 'payment_method', entity: 'e', type: 'card', currency: 'GBP', last_2: '07' },
        { object: 'credit_limit', uid: 'cl_gen', entity: 'e', currency: 'GBP', capacity: '10', rate: '0' },
        { object: 'drawdown', limit: 'cl_gen', amount: '1' },
      ]);
      const methods = await getJson(store(), tenant, '/api/methods/');
      expect(methods.body.items[0]).toMatchObject({ uid: expect.stringMatching(/^pm_[0-9a-f]{32}$/), type: 'CARD', last_2: '07' });
      const [entry] = await store().query<{ id: string }>('SELECT id FROM ledger_entries WHERE org_id = $1', [tenant.org.id]);
      expect(entry?.id).toMatch(/^dd_[0-9a-f]{32}$/);
    });

    it('refuses to delete an organization that still has records, and deletes one that has none', async () => {
      const kept = await createTenant(store());
      const empty = await createTenant(store());
      await importLines(store(), kept.org.uid, [SAMPLE_LINES[0]]);

      const left = () => store().query<{ uid: string }>('SELECT uid FROM organizations WHERE uid IN ($1, $2) ORDER BY uid', [kept.org.uid, empty.org.uid]);
      if (distributedOnCitus(kind)) {
        // The known limit on Citus (docs/scaling.md "Sharding plan"): the refusing trigger runs on every node's copy of
        // the organizations reference table, and may read the distributed tables only on the node that holds the
        // organization's shards, so every delete is refused: by the trigger, or by Citus on whichever node answers first.
        await expect(store().query('DELETE FROM organizations WHERE uid = $1', [kept.org.uid])).rejects.toThrow(
          /an organization that has payment methods or credit limits cannot be deleted|cannot execute a distributed query from a query on a shard/,
        );
        await expect(store().query('DELETE FROM organizations WHERE uid = $1', [empty.org.uid])).rejects.toThrow(
          /cannot execute a distributed query from a query on a shard/,
        );
        expect(await left()).toEqual([kept.org.uid, empty.org.uid].sort().map((uid) => ({ uid })));
        expect((await getJson(store(), kept, '/api/methods/pm_1/')).status).toBe(200);
        return;
      }
      await expect(store().query('DELETE FROM organizations WHERE uid = $1', [kept.org.uid])).rejects.toThrow(
        /an organization that has payment methods or credit limits cannot be deleted/,
      );
      await store().query('DELETE FROM organizations WHERE uid = $1', [empty.org.uid]);

      expect(await left()).toEqual([{ uid: kept.org.uid }]);
      expect((await getJson(store(), kept, '/api/methods/pm_1/')).status).toBe(200);
    });

    it('keeps each organization to its own records even with the same uids', async () => {
      const a = await createTenant(store());
      const b = await createTenant(store());
      await importLines(store(), a.org.uid, SAMPLE_LINES);
      await importLines(store(), b.org.uid, [{ ...SAMPLE_LINES[0], entity: 'ent_b' }]);
      expect((await getJson(store(), a, '/api/methods/pm_1/')).body.entity).toBe('ent_1');
      expect((await getJson(store(), b, '/api/methods/pm_1/')).body.entity).toBe('ent_b');
      expect((await getJson(store(), b, '/api/limits/cl_1/')).status).toBe(404);
    });
  });

  describe('upsert and idempotency', () => {
    it('importing the same file twice changes nothing', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, SAMPLE_LINES);
      const before = await dumpAllTables(store());

      const again = await importLines(store(), tenant.org.uid, SAMPLE_LINES);

      expect(again).toMatchObject({ inserted: 0, updated: 0, unchanged: 2, ledger_entries: { applied: 0, unchanged: 2 } });
      expect(await dumpAllTables(store())).toBe(before);
    });

    it('updates a record by uid when a field changes, and counts the rest unchanged', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, SAMPLE_LINES);
      const before = await databaseNow(store());

      const summary = await importLines(store(), tenant.org.uid, [
        { ...SAMPLE_LINES[0], currency: 'CAD', updated_at: '2024-06-01T00:00:00Z' },
        { ...SAMPLE_LINES[1], capacity: '60000' },
      ]);

      expect(summary).toMatchObject({ inserted: 0, updated: 2, unchanged: 0 });
      const method = await getJson(store(), tenant, '/api/methods/pm_1/');
      expect(method.body).toMatchObject({ currency: 'CAD', created_at: '2024-05-01T10:00:00.123456Z' });
      // The line's updated_at is in the past: the record changed now, and a client syncing from before sees it.
      expect(method.body.updated_at >= before).toBe(true);
      const limit = await getJson(store(), tenant, '/api/limits/cl_1/');
      expect(limit.body).toMatchObject({ capacity: 60000, outstanding: 1000, balance: 59000 });
    });

    it('lets the last line of a uid win within one file', async () => {
      const tenant = await createTenant(store());
      const summary = await importLines(store(), tenant.org.uid, [SAMPLE_LINES[0], { ...SAMPLE_LINES[0], entity: 'ent_last' }]);
      expect(summary.collections.payment_methods).toEqual({ inserted: 1, updated: 0, unchanged: 0 });
      expect((await getJson(store(), tenant, '/api/methods/pm_1/')).body.entity).toBe('ent_last');
    });

    it('merges in batches with the same records and exact counts as in one, however often a uid comes back', async () => {
      const pm = SAMPLE_LINES[0];
      const cl = SAMPLE_LINES[1];
      const changed = { ...pm, entity: 'ent_changed', updated_at: '2024-06-01T00:00:00Z' };
      const fresh = { ...pm, uid: 'pm_new', created_at: '2024-06-02T00:00:00Z', updated_at: '2024-06-02T00:00:00Z' };
      const lines = [
        pm, // unchanged so far…
        fresh,
        changed, // …then changed in a later batch: one update
        { ...fresh, type: 'SEPA', updated_at: '2024-06-04T00:00:00Z' }, // inserted earlier in this import: still one insert
        changed,
        cl,
        cl,
        { object: 'drawdown', id: 'dd_batch', limit: 'cl_1', amount: '1.00', at: '2024-06-03T00:00:00Z' },
      ];
      const summaries = [];
      const records = [];
      for (const batchLines of [2, 1, 20_000]) {
        const tenant = await createTenant(store());
        await importLines(store(), tenant.org.uid, SAMPLE_LINES);
        const before = await databaseNow(store());
        summaries.push(await importLines(store(), tenant.org.uid, lines, { batchLines }));
        // Records that existed before this import and changed get the import's time, which differs per run.
        const stampedNow = (item: { uid: string; updated_at: string }) => {
          if (item.uid !== 'pm_1' && item.uid !== 'cl_1') return item;
          expect(item.updated_at >= before).toBe(true);
          return { ...item, updated_at: 'the import' };
        };
        records.push([
          (await getJson(store(), tenant, '/api/methods/?order_by=created_at')).body.items.map(stampedNow),
          (await getJson(store(), tenant, '/api/limits/')).body.items.map(stampedNow),
        ]);
      }

      expect(summaries[0]).toMatchObject({
        lines: 8,
        collections: { payment_methods: { inserted: 1, updated: 1, unchanged: 0 }, credit_limits: { inserted: 0, updated: 0, unchanged: 1 } },
        ledger_entries: { applied: 1, unchanged: 0 },
      });
      expect(summaries[1]).toEqual(summaries[0]);
      expect(summaries[2]).toEqual(summaries[0]);
      expect(records[0]?.[0]).toMatchObject([
        { uid: 'pm_1', entity: 'ent_changed', updated_at: 'the import' },
        { uid: 'pm_new', type: 'SEPA', updated_at: '2024-06-04T00:00:00.000000Z' },
      ]);
      expect(records[0]?.[1]).toMatchObject([{ uid: 'cl_1', outstanding: 1001 }]);
      expect(records[1]).toEqual(records[0]);
      expect(records[2]).toEqual(records[0]);
    });

    it('never lets a credit-limit line change outstanding, and does not move updated_at back past a drawdown', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, [{ ...SAMPLE_LINES[1], updated_at: '2024-05-01T10:00:00Z' }]);
      const beforeDrawdown = await databaseNow(store());
      await importLines(store(), tenant.org.uid, [{ object: 'drawdown', id: 'd', limit: 'cl_1', amount: '5', at: '2024-07-01T00:00:00Z' }]);
      const drawn = (await getJson(store(), tenant, '/api/limits/cl_1/')).body;
      expect(drawn.updated_at >= beforeDrawdown).toBe(true);

      const summary = await importLines(store(), tenant.org.uid, [{ ...SAMPLE_LINES[1], updated_at: '2024-05-01T10:00:00Z' }]);

      expect(summary.collections.credit_limits).toEqual({ inserted: 0, updated: 0, unchanged: 1 });
      expect((await getJson(store(), tenant, '/api/limits/cl_1/')).body).toMatchObject({ outstanding: 5, updated_at: drawn.updated_at });
    });

    it('stamps a limit with the time of the write, not the backdated time of its ledger line (regression: updated_at moved back to 2020)', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, SAMPLE_LINES);
      const before = await databaseNow(store());

      await importLines(store(), tenant.org.uid, [{ object: 'drawdown', id: 'dd_old', limit: 'cl_1', amount: '500', at: '2020-01-01' }]);

      const synced = await getJson(store(), tenant, `/api/limits/?updated_from=${encodeURIComponent(before)}`);
      expect(synced.body.items).toMatchObject([{ uid: 'cl_1', outstanding: 1500 }]);
      const [entry] = await store().query<{ at: string }>(`SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS at FROM ledger_entries WHERE id = 'dd_old'`);
      expect(entry?.at).toBe('2020-01-01');
    });

    it('refuses a ledger line dated in the future', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, SAMPLE_LINES);
      const before = await dumpAllTables(store());
      const error = await importLines(store(), tenant.org.uid, [{ object: 'drawdown', id: 'dd_future', limit: 'cl_1', amount: '1', at: '2099-01-01' }]).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ImportError);
      expect((error as ImportError).errors).toEqual([{ line: 1, reason: "at must not be in the future, got '2099-01-01T00:00:00.000000Z'" }]);
      expect(await dumpAllTables(store())).toBe(before);
    });
  });

  describe('invalid lines', () => {
    const validPm = SAMPLE_LINES[0];
    const cases: [string, string | object, RegExp][] = [
      ['invalid JSON', '{"object": "payment_method",', /is not valid JSON/],
      ['not an object', '[1, 2]', /must be a JSON object/],
      ['unknown object', { object: 'lease', uid: 'x' }, new RegExp(`object must be one of ${IMPORTABLE_OBJECTS.join(', ')}, got 'lease'$`)],
      ['object not a string', { object: 7, uid: 'x' }, /object must be one of payment_method, .*, got a number$/],
      ['no object', { uid: 'x' }, new RegExp(`^object is required: one of ${IMPORTABLE_OBJECTS.join(', ')}$`)],
      ['missing field', { ...validPm, entity: undefined }, /entity is required/],
      ['unknown field', { ...validPm, colour: 'red' }, /unknown field 'colour'/],
      ['outstanding on a credit limit', { ...SAMPLE_LINES[1], outstanding: '10' }, /outstanding cannot be imported/],
      ['inactive currency', { ...validPm, currency: 'XXX' }, /currency must be an active ISO 4217 currency code, got 'XXX'/],
      ['malformed currency', { ...validPm, currency: 'dollars' }, /currency must be a three-letter ISO 4217 currency code/],
      ['currency with a non-ASCII letter that upper-cases to S', { ...validPm, currency: 'uſd' }, /currency must be a three-letter ISO 4217 currency code, got 'uſd'/],
      ['type with a non-ASCII letter that upper-cases to S', { ...validPm, type: 'ſepa' }, /type must be one of ACH, SEPA, BACS, WIRE, CARD, got 'ſepa'/],
      ['entity with a lone surrogate', { ...validPm, entity: 'ent_\ud800' }, /entity must be well-formed Unicode/],
      ['unknown type', { ...validPm, type: 'CHEQUE' }, /type must be one of ACH, SEPA, BACS, WIRE, CARD/],
      ['three decimal places (string)', { ...SAMPLE_LINES[2], amount: '10.001' }, /amount must have at most 2 decimal places/],
      ['three decimal places (number)', '{"object":"drawdown","limit":"cl_1","amount":10.001}', /amount must have at most 2 decimal places/],
      ['precision a float would lose', '{"object":"drawdown","limit":"cl_1","amount":1.0000000000000000001}', /amount must have at most 2 decimal places/],
      ['zero amount', { ...SAMPLE_LINES[2], amount: '0' }, /amount must be greater than 0/],
      ['negative amount', { ...SAMPLE_LINES[2], amount: '-5' }, /amount must be greater than 0/],
      ['amount not a number', { ...SAMPLE_LINES[2], amount: 'lots' }, /amount must be a decimal number/],
      ['amount as boolean', { ...SAMPLE_LINES[2], amount: true }, /amount must be a decimal number or a string/],
      ['too large capacity', { ...SAMPLE_LINES[1], capacity: '10000000000000' }, /capacity must be less than 10000000000000/],
      ['rate too precise', { ...SAMPLE_LINES[1], rate: '0.000000001' }, /rate must have at most 8 decimal places/],
      ['bad timestamp', { ...validPm, created_at: 'yesterday' }, /created_at must be an ISO 8601 timestamp/],
      ['impossible date', { ...validPm, created_at: '2024-02-30' }, /created_at must be a valid calendar date/],
      ['updated before created', { ...validPm, updated_at: '2024-04-01T00:00:00Z' }, /updated_at must not be before created_at/],
      ['account number as a JSON number', { ...validPm, account_number: 123456789 }, /account_number must be a string/],
      ['account number and last_2', { ...validPm, last_2: '89' }, /give account_number or last_2, not both/],
      ['account number not ending in digits', { ...validPm, account_number: 'ABCDEFG' }, /account_number must be letters and digits ending in at least two digits/],
      ['bad last_2', { ...validPm, account_number: undefined, last_2: '7' }, /last_2 must be a string of exactly two digits/],
      ['no account', { ...validPm, account_number: undefined }, /account_number or last_2 is required/],
      ['empty uid', { ...validPm, uid: '' }, /uid must not be empty/],
      ['long uid', { ...validPm, uid: 'u'.repeat(256) }, /uid must be at most 255 characters/],
      ['control character in entity', { ...validPm, entity: 'a\tb' }, /entity must not contain control characters/],
      ['uid as a number', { ...validPm, uid: 7 }, /uid must be a string/],
    ];

    it('reports every invalid line with its line number and reason, and writes nothing', async () => {
      const tenant = await createTenant(store());
      const lines = [SAMPLE_LINES[0], SAMPLE_LINES[1], ...cases.map(([, line]) => line)];

      const error = await importLines(store(), tenant.org.uid, lines).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(ImportError);
      const importError = error as ImportError;
      expect(importError.total).toBe(cases.length);
      cases.forEach(([name, , reason], index) => {
        const reported = importError.errors[index];
        expect(reported?.line, name).toBe(index + 3);
        expect(reported?.reason, name).toMatch(reason);
      });
      expect(await countRows(store(), tenant.org.id)).toEqual({ methods: 0, limits: 0, ledger: 0 });
    });

    it('lists every reason of a line at once', async () => {
      const tenant = await createTenant(store());
      const error = (await importLines(store(), tenant.org.uid, [{ ...validPm, currency: 'XXX', type: 'NOPE' }]).catch((e: unknown) => e)) as ImportError;
      expect(error.errors[0]?.reason).toMatch(/type must be one of .*; currency must be an active/);
    });

    it('rejects a line longer than the limit without buffering it', async () => {
      const tenant = await createTenant(store());
      const error = (await importLines(store(), tenant.org.uid, [SAMPLE_LINES[0], { ...validPm, entity: 'e'.repeat(5000) }, SAMPLE_LINES[1]], {
        maxLineBytes: 1000,
      }).catch((e: unknown) => e)) as ImportError;
      expect(error.errors).toEqual([{ line: 2, reason: 'is longer than 1000 bytes' }]);
    });

    it('refuses a line whose bytes are not UTF-8 instead of storing replacement characters, and keeps real ones', async () => {
      const tenant = await createTenant(store());
      const latin1 = Buffer.concat([Buffer.from(JSON.stringify({ ...validPm, uid: 'pm_latin1', entity: 'caf' }).replace('"caf"', '"caf')), Buffer.from([0xe9]), Buffer.from('"}')]);
      const replacement = JSON.stringify({ ...validPm, uid: 'pm_fffd', entity: 'caf\ufffd' });
      const input = Buffer.concat([Buffer.from(`${JSON.stringify(SAMPLE_LINES[0])}\n`), latin1, Buffer.from(`\n${replacement}\n`)]);
      const error = (await importJsonl(store(), tenant.org.uid, Readable.from([input])).catch((e: unknown) => e)) as ImportError;
      expect(error.errors).toEqual([{ line: 2, reason: 'is not valid UTF-8 (a file in another encoding must be converted first)' }]);
      expect(await countRows(store(), tenant.org.id)).toEqual({ methods: 0, limits: 0, ledger: 0 });
      // A U+FFFD the file really holds (encoded as UTF-8) is data like any other.
      await importJsonl(store(), tenant.org.uid, Readable.from([Buffer.from(replacement)]));
      expect((await getJson(store(), tenant, '/api/methods/pm_fffd/')).body).toMatchObject({ entity: 'caf\ufffd' });
    });

    it('caps the listing and counts the rest', async () => {
      const tenant = await createTenant(store());
      const lines = Array.from({ length: 150 }, (_, i) => ({ ...validPm, uid: `pm_${i}`, currency: 'XXX' }));
      const error = (await importLines(store(), tenant.org.uid, lines, { maxErrors: 100 }).catch((e: unknown) => e)) as ImportError;
      expect(error.total).toBe(150);
      expect(error.errors).toHaveLength(100);
      expect(error.errors[99]?.line).toBe(100);
      expect(error.message).toMatch(/150 invalid lines; nothing was imported/);
      expect(error.message).toMatch(/… and 50 more$/);
    });

    it('refuses ledger lines that cannot apply, naming their lines, and writes nothing', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, SAMPLE_LINES);
      const before = await dumpAllTables(store());

      const error = (await importLines(store(), tenant.org.uid, [
        { ...SAMPLE_LINES[0], entity: 'changed' },
        { object: 'drawdown', id: 'dd_1', limit: 'cl_1', amount: '5.00' },
        { object: 'drawdown', id: 'dd_new', limit: 'cl_nope', amount: '5.00' },
        { object: 'drawdown', id: 'dd_twice', limit: 'cl_1', amount: '5.00' },
        { object: 'repayment', id: 'dd_twice', limit: 'cl_1', amount: '5.00' },
      ]).catch((e: unknown) => e)) as ImportError;

      expect(error.errors).toEqual([
        { line: 2, reason: expect.stringMatching(/ledger entry 'dd_1' already exists with different content \(drawdown of 1200.00 on cl_1/) },
        { line: 3, reason: "no credit limit 'cl_nope' in this organization or this file" },
        { line: 5, reason: "ledger id 'dd_twice' is used on line 4 with different content" },
      ]);
      expect(await dumpAllTables(store())).toBe(before);
    });

    it('refuses a drawdown above the balance and a repayment above outstanding at their point in the file', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, SAMPLE_LINES);
      const before = await dumpAllTables(store());

      const error = (await importLines(store(), tenant.org.uid, [
        { ...SAMPLE_LINES[1], uid: 'cl_2', capacity: '100' },
        { object: 'drawdown', id: 'a', limit: 'cl_1', amount: '48000' },
        { object: 'drawdown', id: 'b', limit: 'cl_1', amount: '1000.01' },
        { object: 'repayment', id: 'c', limit: 'cl_2', amount: '1' },
      ]).catch((e: unknown) => e)) as ImportError;

      expect(error.errors).toEqual([
        { line: 3, reason: 'drawdown of 1000.01 exceeds the balance of cl_1 at this point (balance 1000.00, capacity 50000.00)' },
        { line: 4, reason: 'repayment of 1.00 exceeds the outstanding amount of cl_2 at this point (outstanding 0.00)' },
      ]);
      expect(await dumpAllTables(store())).toBe(before);
    });

    it('reports field errors, unknown references, id conflicts, capacities and overdraws of one file in one run (regression: they came in rounds)', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, SAMPLE_LINES); // cl_1: capacity 50000.00, outstanding 1000.00
      const before = await dumpAllTables(store());

      const error = (await importLines(store(), tenant.org.uid, [
        { ...SAMPLE_LINES[1], uid: 'cl_2', capacity: '100' }, // 1: valid
        { ...validPm, uid: 'pm_2', currency: 'XXX' }, // 2: field error
        { ...SAMPLE_LINES[1], uid: 'cl_bad', rate: 'high' }, // 3: field error: cl_bad is not created
        { object: 'drawdown', id: 'a', limit: 'cl_bad', amount: '5' }, // 4: refers to an invalid line's limit
        { object: 'drawdown', id: 'b', limit: 'cl_nope', amount: '5' }, // 5: refers to nothing
        { object: 'drawdown', id: 'c', limit: 'cl_2', amount: '60' }, // 6: valid (outstanding 60)
        { object: 'drawdown', id: 'd', limit: 'cl_2', amount: '50' }, // 7: overdraws (60 + 50 > 100)
        { object: 'drawdown', id: 'e', limit: 'cl_2', amount: '40' }, // 8: valid: line 7 was refused (60 + 40 = 100)
        { object: 'repayment', id: 'f', limit: 'cl_2', amount: '100.01' }, // 9: exceeds outstanding 100
        { object: 'drawdown', id: 'c', limit: 'cl_2', amount: '1' }, // 10: id c used with different content
        { object: 'drawdown', id: 'g', limit: 'cl_2', amount: '0' }, // 11: field error
        { ...SAMPLE_LINES[1], capacity: '999.99' }, // 12: capacity of cl_1 below its outstanding
        { object: 'drawdown', id: 'h', limit: 'cl_1', amount: '49000.01' }, // 13: overdraws cl_1 (its capacity stays 50000)
      ]).catch((e: unknown) => e)) as ImportError;

      expect(error).toBeInstanceOf(ImportError);
      expect(error.errors.map((e) => e.line)).toEqual([2, 3, 4, 5, 7, 9, 10, 11, 12, 13]);
      expect(error.errors).toMatchObject([
        { line: 2, reason: expect.stringMatching(/^currency must be an active/) },
        { line: 3, reason: expect.stringMatching(/^rate must be a decimal number/) },
        { line: 4, reason: "no credit limit 'cl_bad' in this organization or this file" },
        { line: 5, reason: "no credit limit 'cl_nope' in this organization or this file" },
        { line: 7, reason: 'drawdown of 50.00 exceeds the balance of cl_2 at this point (balance 40.00, capacity 100.00)' },
        { line: 9, reason: 'repayment of 100.01 exceeds the outstanding amount of cl_2 at this point (outstanding 100.00)' },
        { line: 10, reason: "ledger id 'c' is used on line 6 with different content" },
        { line: 11, reason: expect.stringMatching(/^amount must be greater than 0/) },
        { line: 12, reason: expect.stringMatching(/^capacity 999.99 is below the outstanding amount of cl_1/) },
        { line: 13, reason: 'drawdown of 49000.01 exceeds the balance of cl_1 at this point (balance 49000.00, capacity 50000.00)' },
      ]);
      expect(error.total).toBe(10);
      expect(await dumpAllTables(store())).toBe(before);
    });

    it('caps a report that mixes phases at the first lines in line order', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, SAMPLE_LINES);
      const lines = [
        ...Array.from({ length: 5 }, (_, i) => ({ object: 'drawdown', id: `x${i}`, limit: 'cl_nope', amount: '1' })),
        ...Array.from({ length: 5 }, (_, i) => ({ ...validPm, uid: `pm_${i}`, currency: 'XXX' })),
      ];
      const error = (await importLines(store(), tenant.org.uid, lines, { maxErrors: 3 }).catch((e: unknown) => e)) as ImportError;
      expect(error.total).toBe(10);
      expect(error.errors.map((e) => e.line)).toEqual([1, 2, 3]);
    });

    it('refuses lowering a capacity below the outstanding amount', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, SAMPLE_LINES);
      const error = (await importLines(store(), tenant.org.uid, [{ ...SAMPLE_LINES[1], capacity: '999.99' }]).catch((e: unknown) => e)) as ImportError;
      expect(error.errors).toEqual([{ line: 1, reason: expect.stringMatching(/capacity 999.99 is below the outstanding amount of cl_1 \(1000.00\)/) }]);
    });
  });
});

async function countRows(store: Store, orgId: string) {
  const [row] = await store.query<{ methods: string; limits: string; ledger: string }>(
    `SELECT (SELECT count(*) FROM payment_methods WHERE org_id = $1)::text AS methods,
            (SELECT count(*) FROM credit_limits WHERE org_id = $1)::text AS limits,
            (SELECT count(*) FROM ledger_entries WHERE org_id = $1)::text AS ledger`,
    [orgId],
  );
  return { methods: Number(row?.methods), limits: Number(row?.limits), ledger: Number(row?.ledger) };
}
