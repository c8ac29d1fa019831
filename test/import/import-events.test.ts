import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { ImportError } from '../../src/import/index.js';
import { createOrganization } from '../../src/organizations/organizations.js';
import { openStore, parseDatabaseUrl } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { runCli } from '../helpers/cli.js';
import { importLines } from '../helpers/import-lines.js';
import { pgliteDirectoryFromTemplate, TEST_SHARED_BUFFERS } from '../helpers/pglite-template.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

interface LoggedEvent {
  type: string;
  object_uid: string;
  data_object: Record<string, unknown>;
  previous_attributes: Record<string, unknown> | null;
  request_id: string | null;
  idempotency_key: string | null;
  import_id: string | null;
}

/** Publishes what the organization's outbox holds (as `lending-api import` does after its commit) and returns the whole log, oldest first. */
async function publishedLog(store: Store, orgId: string): Promise<LoggedEvent[]> {
  await publishAllEvents(store, orgId);
  const [pending] = await store.query<{ n: number }>('SELECT count(*)::int AS n FROM event_outbox WHERE org_id = $1', [orgId]);
  expect(Number(pending?.n)).toBe(0);
  return store.query<LoggedEvent>(
    `SELECT type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id
       FROM events WHERE org_id = $1 ORDER BY created_at, id`,
    [orgId],
  );
}

/** `type object_uid` of each event, sorted: what the import emitted, whatever order the merge wrote it in. */
function kinds(events: readonly LoggedEvent[]): string[] {
  return events.map((event) => `${event.type} ${event.object_uid}`).sort();
}

const FILE = [
  { object: 'entity', uid: 'ent_1', name: 'Acme Ltd', country: 'GB' },
  { object: 'entity', uid: 'ent_2', name: 'Borealis', country: 'US' },
  { object: 'payment_method', uid: 'pm_1', entity: 'ent_1', type: 'ACH', currency: 'USD', last_2: '42' },
  { object: 'payment_method', uid: 'pm_2', entity: 'ent_2', type: 'ACH', currency: 'USD', last_2: '43' },
  { object: 'credit_limit', uid: 'cl_1', entity: 'ent_1', currency: 'USD', capacity: '10000.00', rate: '0.0005' },
  { object: 'credit_limit', uid: 'cl_2', entity: 'ent_2', currency: 'USD', capacity: '5000.00', rate: '0.0004' },
  { object: 'credit_limit', uid: 'cl_idle', entity: 'ent_2', currency: 'USD', capacity: '100.00', rate: '0.0004' },
  { object: 'drawdown', id: 'dd_1', limit: 'cl_1', amount: '1200.00' },
  { object: 'repayment', id: 'rp_1', limit: 'cl_1', amount: '200.00' },
  { object: 'loan', uid: 'ln_1', credit_limit: 'cl_2', payment_method: 'pm_2', principal: '3000.00', repaid: '1000.00' },
  { object: 'loan', uid: 'ln_paid', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '50.00', repaid: '50.00' },
];

describeEachStore('import: the events of what it changes (SPEC §3c)', (store) => {
  it('a first import emits one *.created per record and entry, plus credit_limit.updated for each limit its ledger lines and loans move, all naming the import', async () => {
    const tenant = await createTenant(store());
    await importLines(store(), tenant.org.uid, FILE, { importId: 'imp_first' });
    const log = await publishedLog(store(), tenant.org.id);

    expect(kinds(log)).toEqual(
      [
        'entity.created ent_1',
        'entity.created ent_2',
        'payment_method.created pm_1',
        'payment_method.created pm_2',
        'credit_limit.created cl_1',
        'credit_limit.created cl_2',
        'credit_limit.created cl_idle',
        'loan.created ln_1',
        'loan.created ln_paid',
        'ledger_entry.created dd_1',
        'ledger_entry.created rp_1',
        // A loan draws its outstanding as an entry of its own; a repaid one draws nothing.
        'ledger_entry.created loan:ln_1',
        // The import moves each limit once, by the sum of its lines: one update per limit moved, none for cl_idle.
        'credit_limit.updated cl_1',
        'credit_limit.updated cl_2',
      ].sort(),
    );
    for (const event of log) expect(event).toMatchObject({ import_id: 'imp_first', request_id: null, idempotency_key: null });
    for (const event of log.filter((e) => e.type.endsWith('.created'))) expect(event.previous_attributes).toBeNull();

    const cl1 = log.find((e) => e.type === 'credit_limit.updated' && e.object_uid === 'cl_1');
    expect(cl1?.data_object).toMatchObject({ uid: 'cl_1', outstanding: 1000, balance: 9000 });
    expect(cl1?.previous_attributes).toMatchObject({ outstanding: 0, balance: 10000 });
    expect(log.find((e) => e.object_uid === 'ln_paid')?.data_object).toMatchObject({ status: 'repaid', outstanding: 0 });
    expect(log.find((e) => e.object_uid === 'loan:ln_1')?.data_object).toMatchObject({ kind: 'drawdown', amount: 2000, loan: 'ln_1' });
  });

  it('importing the same file again emits nothing', async () => {
    const tenant = await createTenant(store());
    await importLines(store(), tenant.org.uid, FILE);
    const first = await publishedLog(store(), tenant.org.id);
    const again = await importLines(store(), tenant.org.uid, FILE, { importId: 'imp_again' });
    expect(again.inserted + again.updated + again.ledger_entries.applied).toBe(0);
    expect(await publishedLog(store(), tenant.org.id)).toEqual(first);
  });

  it('an import that changes some records emits *.updated for those alone, with the earlier values of exactly the fields that changed', async () => {
    const tenant = await createTenant(store());
    await importLines(store(), tenant.org.uid, FILE);
    const before = await publishedLog(store(), tenant.org.id);
    const createdOf = (uid: string) => before.find((e) => e.object_uid === uid && e.type.endsWith('.created'))?.data_object ?? {};

    const changed = FILE.map((line) => {
      if (line.uid === 'pm_1') return { ...line, type: 'WIRE' };
      if (line.uid === 'ent_2') return { ...line, name: 'Borealis Group', country: 'CA' };
      if (line.uid === 'cl_idle') return { ...line, capacity: '250.00' };
      return line;
    });
    await importLines(store(), tenant.org.uid, changed, { importId: 'imp_change' });
    const added = (await publishedLog(store(), tenant.org.id)).slice(before.length);

    expect(kinds(added)).toEqual(['credit_limit.updated cl_idle', 'entity.updated ent_2', 'payment_method.updated pm_1']);
    for (const event of added) expect(event).toMatchObject({ import_id: 'imp_change', request_id: null, idempotency_key: null });
    const of = (uid: string) => added.find((e) => e.object_uid === uid);
    expect(of('pm_1')?.previous_attributes).toEqual({ type: 'ACH', updated_at: createdOf('pm_1').updated_at });
    expect(of('pm_1')?.data_object).toMatchObject({ uid: 'pm_1', type: 'WIRE' });
    expect(of('ent_2')?.previous_attributes).toEqual({ name: 'Borealis', country: 'US', updated_at: createdOf('ent_2').updated_at });
    expect(of('ent_2')?.data_object).toMatchObject({ name: 'Borealis Group', country: 'CA' });
    // The capacity moves the balance with it.
    expect(of('cl_idle')?.previous_attributes).toEqual({ capacity: 100, balance: 100, updated_at: createdOf('cl_idle').updated_at });
    expect(of('cl_idle')?.data_object).toMatchObject({ capacity: 250, balance: 250 });
  });

  it('an import that fails (rolled back) emits nothing', async () => {
    const tenant = await createTenant(store());
    await importLines(store(), tenant.org.uid, FILE);
    const before = await publishedLog(store(), tenant.org.id);
    const failing = [
      ...FILE.map((line) => (line.uid === 'pm_1' ? { ...line, type: 'WIRE' } : line)),
      { object: 'entity', uid: 'ent_new', name: 'New', country: 'FR' },
      // Overdraws cl_idle: the whole import is refused.
      { object: 'drawdown', id: 'dd_too_much', limit: 'cl_idle', amount: '100.01' },
    ];
    await expect(importLines(store(), tenant.org.uid, failing, { importId: 'imp_failed' })).rejects.toBeInstanceOf(ImportError);
    expect(await publishedLog(store(), tenant.org.id)).toEqual(before);
  });
});

// A CLI process costs seconds of start-up on a busy machine.
describe('lending-api import and draw put their events in the log themselves (on a pglite directory, no serve running)', { timeout: 600_000 }, () => {
  it('import prints its id, and the log holds its events with that id; draw adds its own', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'import-events-'));
    try {
      const url = `pglite://${path.join(dir, 'db')}`;
      await pgliteDirectoryFromTemplate(path.join(dir, 'db'), (db) => createOrganization(db, 'Acme', 'acme'));
      const file = `${FILE.map((line) => JSON.stringify(line)).join('\n')}\n`;
      const imported = await runCli(['import', '--org', 'acme', '--json', '-'], url, file);
      expect(imported.code, imported.stderr).toBe(0);
      const summary = JSON.parse(imported.stdout) as { import_id: string; events_published: number };
      expect(summary.import_id).toMatch(/^imp_[0-9a-f]{24}$/);
      expect(summary.events_published).toBe(14);

      const metricsFile = path.join(dir, 'import.prom');
      const human = await runCli(['import', '--org', 'acme', '--metrics-file', metricsFile, '-'], url, file);
      const printedId = /^imported 11 lines into acme in [\d.]+s \(import (imp_[0-9a-f]{24})\)$/m.exec(human.stdout)?.[1];
      expect(printedId, human.stdout).toBeDefined();
      expect(printedId).not.toBe(summary.import_id);
      expect(human.stdout).toMatch(/events: +0 published/);
      expect(await readFile(metricsFile, 'utf8')).toMatch(new RegExp(`^lending_api_import_info\\{[^}]*import_id="${printedId}"[^}]*\\} 1$`, 'm'));

      const drawn = await runCli(['draw', '--org', 'acme', '--limit', 'cl_idle', '--amount', '10', '--id', 'dd_cli'], url);
      expect(drawn.code, drawn.stderr).toBe(0);

      const location = parseDatabaseUrl(url);
      if ('error' in location) throw new Error(location.error);
      const db = await openStore(location, { pgliteSharedBuffers: TEST_SHARED_BUFFERS });
      try {
        const [outbox] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM event_outbox');
        expect(Number(outbox?.n)).toBe(0);
        const log = await db.query<{ type: string; object_uid: string; import_id: string | null }>('SELECT type, object_uid, import_id FROM events ORDER BY created_at');
        expect(log.slice(0, 14).every((event) => event.import_id === summary.import_id)).toBe(true);
        expect(log.slice(14)).toEqual(
          expect.arrayContaining([
            { type: 'ledger_entry.created', object_uid: 'dd_cli', import_id: null },
            { type: 'credit_limit.updated', object_uid: 'cl_idle', import_id: null },
          ]),
        );
        expect(log).toHaveLength(16);
      } finally {
        await db.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
