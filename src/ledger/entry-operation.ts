import { hash } from 'node:crypto';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import { serializeRecord } from '../listing/serialize.js';
import { selectList } from '../listing/sql.js';
import type { Queryable } from '../store/store.js';
import { claimedKeyGate, type ClaimRequest } from './idempotency-keys.js';
import { RetryWrite, type Applied, type LedgerOperation, type LoneWrite } from './ledger-operation.js';
import type { LedgerEntryInput, LedgerKind } from './ledger-entry.js';
import { LedgerError } from './ledger-error.js';

const TIMESTAMP_TEXT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * A limit's updated_at after an entry: the time its stored row changed (the
 * transaction's time), never earlier than it was. Not the entry's own `at`,
 * which may lie in the past: a client syncing with `updated_from` would
 * never see a change stamped before its last sync.
 */
const RECORD_CHANGED_AT = 'greatest(t.updated_at, now())';

/** A drawdown or repayment to record, in an organization. */
export interface EntryWrite extends LedgerEntryInput {
  readonly orgId: string;
  /**
   * The id was given by the caller (the CLI's --id), so it may already be
   * recorded: the same entry again is answered as it stands (`applied: false`),
   * another entry under that id is an `id_conflict`. HTTP writes get a fresh
   * id and are made idempotent by their Idempotency-Key instead.
   */
  readonly idGivenByCaller?: boolean;
}

/** An entry as recorded, and its limit after it. */
export interface LedgerResult {
  readonly id: string;
  readonly kind: LedgerKind;
  readonly limit: string;
  readonly amount: string;
  readonly at: string;
  readonly key_id: string | null;
  readonly reference: string | null;
  /** When the entry was recorded (the transaction's time). */
  readonly recorded_at: string;
  /** False when the same entry had already been recorded: nothing changed. */
  readonly applied: boolean;
  readonly capacity: string;
  readonly outstanding: string;
  readonly balance: string;
  readonly updated_at: string;
}

/** How an entry's answer shows the limit after it: the columns selected from its row (alias `t`) and their JSON. */
export interface LimitView {
  /** Selects at least uid, capacity, outstanding, balance and updated_at (as text), under those names. */
  readonly columns: string;
  json(row: Record<string, string | null>): unknown;
}

const views = new WeakMap<ResourceDefinition, LimitView>();

/** The limit as `GET /api/limits/{uid}/` shows it (`limits`: the credit-limit resource). */
export function limitViewOf(limits: ResourceDefinition): LimitView {
  let view = views.get(limits);
  if (!view) views.set(limits, (view = { columns: selectList(limits, 't'), json: (row) => serializeRecord(limits, row) }));
  return view;
}

/** The limit's balance fields only (the CLI's view). */
export const LIMIT_BALANCE_VIEW: LimitView = {
  columns: `t.uid, t.capacity::text AS capacity, t.outstanding::text AS outstanding, t.balance::text AS balance,
    to_char(t.updated_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS updated_at`,
  json: (row) => ({
    uid: row.uid,
    capacity: Number(row.capacity),
    outstanding: Number(row.outstanding),
    balance: Number(row.balance),
    updated_at: row.updated_at,
  }),
};

/** The one row the entry statement answers: the limit's resource fields (NULL when it did not move) and the entry's columns. */
type EntryRow = Record<string, string | null> & {
  readonly future: boolean;
  readonly limit_row_id: string | null;
  readonly entry_amount: string | null;
  readonly entry_at: string | null;
  readonly entry_key_id: string | null;
  readonly entry_reference: string | null;
  readonly entry_recorded_at: string | null;
};

/**
 * A drawdown or repayment as a LedgerOperation: the limit's conditional
 * UPDATE and the entry's INSERT in one statement, answered 201 with the
 * entry and the limit after it (`limits` is the credit-limit resource, so
 * the limit reads as `GET /api/limits/{uid}/` shows it).
 *
 * Concurrency design: the balance check and the change are ONE conditional
 * UPDATE (`… SET outstanding = outstanding + x WHERE outstanding + x <=
 * capacity`). Under READ COMMITTED a concurrent writer of the same row makes
 * the statement wait, then re-evaluate its WHERE against the committed row
 * version, so two drawdowns can never both pass a check made on a stale
 * value: no lost update, no overdraw, no SERIALIZABLE retry loop. The
 * table's CHECK (0 <= outstanding <= capacity) is the last line of defence.
 * Locks: the limit's row, then the entry's key (the import does the same).
 */
export function entryOperation(limits: LimitView, write: EntryWrite): LedgerOperation<LedgerResult> {
  return {
    orgId: write.orgId,
    lane: `${write.orgId}/${write.limit}`,
    get fingerprint() {
      return fingerprintOf(write);
    },
    apply: (tx) => applyEntry(tx, limits, write),
    // A caller's own id may be recorded already: that is answered from what is stored, the long way.
    alone: write.idGivenByCaller ? undefined : (claim) => loneEntry(limits, write, claim),
    renderStored: (row) => renderStoredEntry(limits, row),
  };
}

const loneStatements = new WeakMap<LimitView, { drawdown: string; repayment: string; answer: string }>();

/**
 * The entry as a LoneWrite. The write: gated on the key claimed earlier in
 * its transaction ($9, claimedKeyGate), the limit's conditional UPDATE and
 * the entry's INSERT; its id is new (no ON CONFLICT: a clash would raise
 * and stop the transaction before its COMMIT). The answer: the entry and
 * its limit, read after the write (the limit's row is locked by it until
 * the COMMIT, so the limit reads as the write left it), the columns
 * `renderStoredEntry` renders.
 */
function loneEntry(limits: LimitView, write: EntryWrite, claim: ClaimRequest): LoneWrite {
  let texts = loneStatements.get(limits);
  if (!texts) {
    const writeText = (kind: LedgerKind) => {
      const delta = kind === 'drawdown' ? 't.outstanding + $3::numeric' : 't.outstanding - $3::numeric';
      const guard = kind === 'drawdown' ? 't.outstanding + $3::numeric <= t.capacity' : 't.outstanding >= $3::numeric';
      return `WITH moved AS (
          UPDATE credit_limits t SET outstanding = ${delta}, updated_at = ${RECORD_CHANGED_AT}
           WHERE t.org_id = $1 AND t.uid = $2 AND ${guard} AND ($6::timestamptz IS NULL OR $6::timestamptz <= now())
             AND ${claimedKeyGate(9)}
           RETURNING t.id
        ), inserted AS (
          INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference)
          SELECT $1, $4, moved.id, $5, $3::numeric, coalesce($6::timestamptz, now()), $7, $8 FROM moved
          RETURNING 1
        )
        SELECT EXISTS (SELECT 1 FROM inserted) AS written`;
    };
    const answer = `SELECT e.id AS entry_id, e.kind AS entry_kind, e.amount::text AS entry_amount,
        to_char(e.at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_at, e.key_id AS entry_key_id, e.reference AS entry_reference,
        to_char(e.recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_recorded_at, ${limits.columns}
       FROM ledger_entries e JOIN credit_limits t ON t.org_id = e.org_id AND t.id = e.limit_id
      WHERE e.org_id = $1 AND t.org_id = $1 AND e.id = $2`;
    loneStatements.set(limits, (texts = { drawdown: writeText('drawdown'), repayment: writeText('repayment'), answer }));
  }
  return {
    write: { sql: texts[write.kind], params: [...entryParams(write), claim.idempotencyKey] },
    answerSelect: { sql: texts.answer, params: [write.orgId, write.id] },
    status: 201,
  };
}

/** The answer of an entry written alone, from the row its answer statement stored: the 201's body and the result. */
function renderStoredEntry(limits: LimitView, stored: Record<string, unknown>): { body: string; value: LedgerResult } {
  const row = stored as Record<string, string | null>;
  const entry: RecordedEntry = {
    id: text(row, 'entry_id'),
    kind: text(row, 'entry_kind') as LedgerKind,
    amount: text(row, 'entry_amount'),
    at: text(row, 'entry_at'),
    key_id: row.entry_key_id ?? null,
    reference: row.entry_reference ?? null,
    recorded_at: text(row, 'entry_recorded_at'),
  };
  // The result is for callers that read it (the CLI's); the HTTP route sends the body only.
  return {
    body: answerBody(limits, entry, row),
    get value() {
      return resultOf(entry, true, row);
    },
  };
}

/**
 * What makes two requests "the same" for an Idempotency-Key: method, path
 * and the canonical body (so `1200`, `"1200.0"` and `1200.00` are one amount).
 */
function fingerprintOf(write: EntryWrite): string {
  const canonical = JSON.stringify(['POST', `/api/limits/${write.limit}/${write.kind}s/`, write.amount, write.at ?? null, write.reference ?? null]);
  // One-shot hash: a quarter of the CPU of createHash().update().digest() for a string this short.
  return hash('sha256', canonical, 'hex');
}

async function applyEntry(tx: Queryable, limits: LimitView, write: EntryWrite): Promise<Applied<LedgerResult>> {
  if (write.idGivenByCaller) {
    const existing = await existingEntry(tx, limits, write);
    if (existing) return existing;
  }
  const [row] = await tx.query<EntryRow>(entryStatement(limits, write.kind), entryParams(write), { prepare: true });
  if (row?.future) throw futureTimeError(write.at ?? '');
  if (!row || row.limit_row_id === null) return { ok: false, refusal: await refusal(tx, write) };
  // The limit moved but the id was recorded by a concurrent transaction (only a caller's own id can be):
  // roll back and run again, which then finds that entry.
  if (row.entry_amount === null || row.entry_at === null || row.entry_recorded_at === null) throw new RetryWrite(`entry ${write.id} was recorded concurrently`);
  const entry = {
    id: write.id,
    kind: write.kind,
    amount: row.entry_amount,
    at: row.entry_at,
    key_id: row.entry_key_id,
    reference: row.entry_reference,
    recorded_at: row.entry_recorded_at,
  };
  return { ok: true, status: 201, body: answerBody(limits, entry, row), value: resultOf(entry, true, row) };
}

type RecordedEntry = Omit<LedgerResult, 'limit' | 'applied' | 'capacity' | 'outstanding' | 'balance' | 'updated_at'>;

/** The 201's body: the entry as `GET /api/limits/{uid}/entries/` shows it, and the limit after it. */
function answerBody(limits: LimitView, entry: RecordedEntry, limitRow: Record<string, string | null>): string {
  return JSON.stringify({
    entry: {
      id: entry.id,
      kind: entry.kind,
      amount: Number(entry.amount),
      at: entry.at,
      reference: entry.reference,
      // A direct drawdown or repayment belongs to no loan (loan writes: loan-operations.ts).
      loan: null,
      key_id: entry.key_id,
      created_at: entry.recorded_at,
    },
    limit: limits.json(limitRow),
  });
}

function resultOf(entry: RecordedEntry, applied: boolean, limit: Record<string, string | null>): LedgerResult {
  return {
    ...entry,
    limit: text(limit, 'uid'),
    applied,
    capacity: text(limit, 'capacity'),
    outstanding: text(limit, 'outstanding'),
    balance: text(limit, 'balance'),
    updated_at: text(limit, 'updated_at'),
  };
}

function text(row: Record<string, string | null>, name: string): string {
  const value = row[name];
  if (typeof value !== 'string') throw new Error(`a ledger entry's answer has no text field '${name}'`);
  return value;
}

function entryParams(write: EntryWrite): (string | null)[] {
  return [write.orgId, write.limit, write.amount, write.id, write.kind, write.at ?? null, write.keyId ?? null, write.reference ?? null];
}

const statements = new WeakMap<LimitView, Map<LedgerKind, string>>();

/**
 * One text per view and kind (a prepared statement): the conditional
 * UPDATE of the limit and, only when it matched, the INSERT of the entry;
 * always one row. A refusal is an UPDATE of no row, which raises nothing and
 * changes nothing. An entry dated after now updates nothing (`future`).
 * Parameters: $1 org id, $2 limit uid, $3 amount, $4 entry id, $5 kind,
 * $6 at (NULL: now), $7 key id, $8 reference.
 */
function entryStatement(limits: LimitView, kind: LedgerKind): string {
  let byKind = statements.get(limits);
  if (!byKind) statements.set(limits, (byKind = new Map()));
  let text = byKind.get(kind);
  if (!text) {
    const delta = kind === 'drawdown' ? 't.outstanding + $3::numeric' : 't.outstanding - $3::numeric';
    const guard = kind === 'drawdown' ? 't.outstanding + $3::numeric <= t.capacity' : 't.outstanding >= $3::numeric';
    // The writes RETURN stored columns only; CTEs that read them turn them
    // into text (to_char, …): on a distributed PostgreSQL (Citus,
    // docs/scaling.md) the RETURNING of a write to a sharded table may hold
    // no function that is not IMMUTABLE.
    text = `WITH moved_row AS (
        UPDATE credit_limits t SET outstanding = ${delta}, updated_at = ${RECORD_CHANGED_AT}
         WHERE t.org_id = $1 AND t.uid = $2 AND ${guard} AND ($6::timestamptz IS NULL OR $6::timestamptz <= now())
         RETURNING t.*
      ), moved AS (
        SELECT t.id AS limit_row_id, ${limits.columns} FROM moved_row t
      ), inserted_row AS (
        INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference)
        SELECT $1, $4, limit_row_id, $5, $3::numeric, coalesce($6::timestamptz, now()), $7, $8 FROM moved
        ON CONFLICT (org_id, id) DO NOTHING
        RETURNING amount, at, key_id, reference, recorded_at
      ), inserted AS (
        SELECT amount::text AS entry_amount, to_char(at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_at, key_id AS entry_key_id,
          reference AS entry_reference, to_char(recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_recorded_at
          FROM inserted_row
      )
      SELECT coalesce($6::timestamptz > now(), false) AS future, moved.*, inserted.*
        FROM (SELECT 1) AS one LEFT JOIN moved ON true LEFT JOIN inserted ON true`;
    byKind.set(kind, text);
  }
  return text;
}

function futureTimeError(at: string): LedgerError {
  return new LedgerError('invalid_entry', `the entry's time ${at} is in the future; a ledger entry may be dated now or earlier`);
}

/** A caller's id already recorded: the same entry is answered as it stands now (nothing changes), another is an id_conflict. */
async function existingEntry(tx: Queryable, limits: LimitView, write: EntryWrite): Promise<Applied<LedgerResult> | undefined> {
  const [row] = await tx.query<RecordedEntry & { limit: string; same: boolean }>(
    `SELECT e.kind, l.uid AS limit, e.amount::text AS amount, to_char(e.at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS at,
            e.key_id, e.reference, to_char(e.recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS recorded_at,
            (e.kind = $3 AND l.uid = $4 AND e.amount = $5::numeric AND ($6::timestamptz IS NULL OR e.at = $6::timestamptz)) AS same
       FROM ledger_entries e JOIN credit_limits l ON l.id = e.limit_id AND l.org_id = $1
      WHERE e.org_id = $1 AND e.id = $2`,
    [write.orgId, write.id, write.kind, write.limit, write.amount, write.at ?? null],
  );
  if (!row) return undefined;
  if (!row.same) {
    throw new LedgerError(
      'id_conflict',
      `ledger entry '${write.id}' already exists with different content (${row.kind} of ${row.amount} on ${row.limit} at ${row.at}); use a new id for a new entry`,
    );
  }
  const [limit] = await tx.query<Record<string, string | null>>(`SELECT ${limits.columns} FROM credit_limits t WHERE t.org_id = $1 AND t.uid = $2`, [
    write.orgId,
    write.limit,
  ]);
  if (!limit) throw new Error(`credit limit ${write.limit} of ledger entry ${write.id} vanished`);
  const entry: RecordedEntry = { id: write.id, kind: write.kind, amount: row.amount, at: row.at, key_id: row.key_id, reference: row.reference, recorded_at: row.recorded_at };
  return { ok: true, status: 200, body: answerBody(limits, entry, limit), value: resultOf(entry, false, limit) };
}

/** Why the conditional UPDATE matched no row: no such limit (thrown), or not enough room (read afresh, after the statement). */
async function refusal(tx: Queryable, write: EntryWrite): Promise<LedgerError & { code: 'insufficient_balance' | 'repayment_exceeds_outstanding' }> {
  const [limit] = await tx.query<{ uid: string; capacity: string; outstanding: string; balance: string }>(
    'SELECT uid, capacity::text AS capacity, outstanding::text AS outstanding, balance::text AS balance FROM credit_limits WHERE org_id = $1 AND uid = $2',
    [write.orgId, write.limit],
  );
  if (!limit) throw new LedgerError('limit_not_found', `no credit limit '${write.limit}'`);
  const error =
    write.kind === 'drawdown'
      ? new LedgerError(
          'insufficient_balance',
          `drawdown of ${write.amount} refused: it exceeds the balance of ${limit.uid} (balance ${limit.balance}, capacity ${limit.capacity}, outstanding ${limit.outstanding}); nothing was changed`,
        )
      : new LedgerError(
          'repayment_exceeds_outstanding',
          `repayment of ${write.amount} refused: it exceeds the outstanding amount of ${limit.uid} (outstanding ${limit.outstanding}); nothing was changed`,
        );
  return error as LedgerError & { code: 'insufficient_balance' | 'repayment_exceeds_outstanding' };
}
