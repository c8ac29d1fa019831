import { Readable } from 'node:stream';
import { buildApp } from '../helpers/app.js';
import { importJsonl } from '../../src/import/index.js';
import { applyLedgerEntry, entryOperation, LedgerWriter, limitViewOf, newLedgerId } from '../../src/ledger/index.js';
import { creditLimits } from '../../src/resources/credit-limits.js';
import { ledgerOf } from '../helpers/ledger.js';
import { ListCache } from '../../src/listing/list-cache.js';
import { listRecords, retrieveRecord } from '../../src/listing/list-records.js';
import { scopeToParent } from '../../src/listing/parent-scope.js';
import { parseListQuery } from '../../src/listing/query-parser.js';
import { RESOURCES } from '../../src/resources/index.js';
import type { Store } from '../../src/store/store.js';
import { insertRecords, PARENT_UID, sampleRecords } from '../helpers/fixtures/index.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { postLoanWrite } from '../helpers/loans.js';
import { createTenant } from '../helpers/tenants.js';
import { postEntry } from '../helpers/writes.js';

const jsonl = (lines: readonly unknown[]) => Readable.from([lines.map((line) => JSON.stringify(line)).join('\n')]);

/**
 * Every statement shape the service, the CLI and the import run on an
 * organization's data, run once through `recorded` on a fresh tenant of
 * `store`: the list engine's shapes of every resource (first, later, deep
 * anchored pages, filters, orderings, nested lists, retrieve), the ledger as
 * the CLI runs it (record, replay, refuse, repay), HTTP writes with an
 * Idempotency-Key (first use and replay), cursor pages, and the import
 * (records and ledger lines, a re-import with a change, a file refused for
 * every reason at once), a loan created and repaid over HTTP and one refused, and a portal link made, exchanged and used.
 * Throws when an answer is not what it should be.
 */
export async function runStatementWorkload(store: Store, recorded: Store): Promise<void> {
  const tenant = await createTenant(store, 'Sharded Lender', 'write');
  for (const resource of RESOURCES) await insertRecords(store, resource, tenant.org.id, sampleRecords(resource, 25));
  await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: 'cl_1', entity: 'ent_1', capacity: '100.00' })]);

  // Small anchor stride, so deep pages go through the anchored statements too.
  const cache = new ListCache({ entries: 100, anchorStride: 10, maxAnchors: 1000 });
  for (const resource of RESOURCES) {
    const equality = resource.filters.find((filter) => filter.operator === '=');
    const sample = sampleRecords(resource, 2)[1]!;
    const byValue = equality ? [`${equality.param}=${encodeURIComponent(sample[resource.fields[equality.field]!.column] ?? '')}`] : [];
    const byLastOrdering = `order_by=${resource.orderings[resource.orderings.length - 1]}`;
    for (const raw of ['', 'page=2', 'page=3', ...byValue, 'order_by=-created_at&page=2', 'created_from=2020-01-01T00:00:00Z', byLastOrdering]) {
      const parsed = parseListQuery(resource, raw);
      const query = resource.parent ? await scopeToParent(recorded, resource, tenant.org.id, PARENT_UID, parsed) : parsed;
      await listRecords(recorded, resource, tenant.org.id, query, cache);
      await listRecords(recorded, resource, tenant.org.id, query, undefined);
    }
    if (!resource.parent) await retrieveRecord(recorded, resource, tenant.org.id, `${resource.path}_1`);
  }

  await applyLedgerEntry(ledgerOf(recorded), tenant.org.id, { kind: 'drawdown', id: 'dd_1', limit: 'cl_1', amount: '10.00' });
  await applyLedgerEntry(ledgerOf(recorded), tenant.org.id, { kind: 'drawdown', id: 'dd_1', limit: 'cl_1', amount: '10.00' });
  const refused = await applyLedgerEntry(ledgerOf(recorded), tenant.org.id, { kind: 'drawdown', id: 'dd_2', limit: 'cl_1', amount: '1000.00' }).then(
    () => false,
    () => true,
  );
  if (!refused) throw new Error('a drawdown above the balance was recorded');
  await applyLedgerEntry(ledgerOf(recorded), tenant.org.id, { kind: 'repayment', id: 'rp_1', limit: 'cl_1', amount: '5.00' });

  const app = await buildApp({ store: recorded });
  try {
    const headers = { authorization: tenant.authorization };
    for (const _ of [1, 2]) {
      const response = await postEntry(app, 'drawdown', 'cl_1', { amount: '1.00', reference: 'loan-1' }, { ...headers, idempotencyKey: 'idem-1' });
      if (response.statusCode >= 300) throw new Error(`HTTP drawdown answered ${response.statusCode}: ${response.body}`);
    }
    const first = await app.inject({ url: '/api/methods/?cursor=', headers });
    if (first.statusCode !== 200) throw new Error(`cursor page answered ${first.statusCode}: ${first.body}`);
    const next = (JSON.parse(first.body) as { next: string | null }).next;
    if (next && (await app.inject({ url: next, headers })).statusCode !== 200) throw new Error('the next cursor page failed');
    const entries = await app.inject({ url: '/api/limits/cl_1/entries/?cursor=', headers });
    if (entries.statusCode !== 200) throw new Error(`entries answered ${entries.statusCode}: ${entries.body}`);
  } finally {
    await app.close();
  }

  // Lone writes to distinct limits waiting together behind one: the joined statements (src/ledger/joined-entries.ts).
  await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: 'cl_2', entity: 'ent_1', capacity: '100.00' }), creditLimit({ uid: 'cl_3', entity: 'ent_1', capacity: '100.00' })]);
  const joinedWriter = new LedgerWriter(recorded, { idempotencyTtlHours: 24, queue: { concurrency: 1 } });
  const joined = await Promise.all(
    ['cl_1', 'cl_2', 'cl_3'].map((limit, i) =>
      joinedWriter.write({
        operation: entryOperation(limitViewOf(creditLimits), { orgId: tenant.org.id, kind: 'drawdown', id: newLedgerId('drawdown'), limit, amount: '1.00', keyId: tenant.keyId }),
        idempotency: { key: `joined-${i}`, keyId: tenant.keyId },
        requestId: `joined-${i}`,
      }),
    ),
  );
  if (joined.some((answer) => answer.status !== 201)) throw new Error(`joined drawdowns answered ${joined.map((answer) => answer.status).join(', ')}`);

  const file = [
    { object: 'entity', uid: 'ent_import', name: 'Imported', country: 'US' },
    { object: 'credit_limit', uid: 'cl_import', entity: 'ent_import', currency: 'USD', capacity: 500, rate: 0.05 },
    { object: 'payment_method', uid: 'pm_import', entity: 'ent_import', type: 'ACH', currency: 'USD', account_number: '12345678' },
    { object: 'drawdown', id: 'dd_import', limit: 'cl_import', amount: 20 },
    { object: 'drawdown', id: 'dd_import_2', limit: 'cl_1', amount: 1 },
  ];
  await importJsonl(recorded, tenant.org.uid, jsonl(file), { batchLines: 2 });
  await importJsonl(recorded, tenant.org.uid, jsonl([...file, { object: 'credit_limit', uid: 'cl_import', entity: 'ent_import', currency: 'USD', capacity: 600, rate: 0.05 }]));
  const refusedFile = await importJsonl(
    recorded,
    tenant.org.uid,
    jsonl([
      { object: 'drawdown', id: 'dd_import', limit: 'cl_import', amount: 21 },
      { object: 'drawdown', id: 'dd_too_much', limit: 'cl_import', amount: 10_000 },
      { object: 'drawdown', id: 'dd_nowhere', limit: 'cl_missing', amount: 1 },
      { object: 'credit_limit', uid: 'cl_1', entity: 'ent_1', currency: 'USD', capacity: 0, rate: 0.05 },
    ]),
  ).then(
    () => false,
    () => true,
  );
  if (!refusedFile) throw new Error('an import with invalid lines was accepted');

  // Loans over HTTP, on the imported limit and method: created (the limit moved, the loan, its drawdown entry), then repaid in part.
  const loans = await buildApp({ store: recorded });
  try {
    const created = await postLoanWrite(loans, undefined, { credit_limit: 'cl_import', payment_method: 'pm_import', principal: '2.00' }, { authorization: tenant.authorization });
    if (created.statusCode !== 201) throw new Error(`loan creation answered ${created.statusCode}: ${created.body}`);
    const loan = (JSON.parse(created.body) as { loan: { uid: string } }).loan.uid;
    const repaid = await postLoanWrite(loans, loan, { amount: '1.00' }, { authorization: tenant.authorization });
    if (repaid.statusCode !== 201) throw new Error(`loan repayment answered ${repaid.statusCode}: ${repaid.body}`);
    // Refused (over the balance): the joined statement writes nothing, and the loan runs the long way's statements, which say why.
    const refused = await postLoanWrite(loans, undefined, { credit_limit: 'cl_import', payment_method: 'pm_import', principal: '999999999.00' }, { authorization: tenant.authorization });
    if (refused.statusCode !== 409) throw new Error(`a loan over the balance answered ${refused.statusCode}: ${refused.body}`);
  } finally {
    await loans.close();
  }

  // The portal (a reference table): a link made (after its organization's pruning), exchanged, refused a second
  // time (the refusal's lookup), a list read with the session (the Bearer lookup, joined to the key), and the
  // session ended (signing out).
  const portal = await buildApp({ store: recorded });
  try {
    const link = await portal.inject({ method: 'POST', url: '/api/portal_sessions/', headers: { authorization: tenant.authorization } });
    if (link.statusCode !== 201) throw new Error(`portal link answered ${link.statusCode}: ${link.body}`);
    const token = new URL((JSON.parse(link.body) as { url: string }).url).hash.replace('#token=', '');
    const exchange = () => portal.inject({ method: 'POST', url: '/api/portal_sessions/exchange/', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ token }) });
    const granted = await exchange();
    if (granted.statusCode !== 201) throw new Error(`portal exchange answered ${granted.statusCode}: ${granted.body}`);
    if ((await exchange()).statusCode !== 401) throw new Error('a portal link was exchanged twice');
    const session = (JSON.parse(granted.body) as { session: string }).session;
    const listed = await portal.inject({ url: '/api/limits/', headers: { authorization: `Bearer ${session}` } });
    if (listed.statusCode !== 200) throw new Error(`a list with a portal session answered ${listed.statusCode}: ${listed.body}`);
    const ended = await portal.inject({ method: 'DELETE', url: '/api/portal_sessions/current/', headers: { authorization: `Bearer ${session}` } });
    if (ended.statusCode !== 204) throw new Error(`signing out of a portal session answered ${ended.statusCode}: ${ended.body}`);
  } finally {
    await portal.close();
  }
}
