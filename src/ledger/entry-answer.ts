import type { ResourceDefinition } from '../listing/resource-definition.js';
import { selectList, serializeRecord } from '../listing/record-rendering.js';
import type { LedgerEntryInput, LedgerKind } from './ledger-entry.js';

/* A drawdown's or repayment's answer: what the write was, what it recorded, and its 201 body (the entry and the limit after it). */

/** PostgreSQL's to_char pattern of every timestamp an entry's answer holds (UTC, microseconds). */
export const TIMESTAMP_TEXT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

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

export type RecordedEntry = Omit<LedgerResult, 'limit' | 'applied' | 'capacity' | 'outstanding' | 'balance' | 'updated_at'>;

/** The 201's body: the entry as `GET /api/limits/{uid}/entries/` shows it, and the limit after it. */
export function answerBody(limits: LimitView, entry: RecordedEntry, limitRow: Record<string, string | null>): string {
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

export function resultOf(entry: RecordedEntry, applied: boolean, limit: Record<string, string | null>): LedgerResult {
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

export function text(row: Record<string, string | null>, name: string): string {
  const value = row[name];
  if (typeof value !== 'string') throw new Error(`a ledger entry's answer has no text field '${name}'`);
  return value;
}

/** The answer of an entry written alone, from the row its answer statement stored: the 201's body and the result. */
export function renderStoredEntry(limits: LimitView, stored: Record<string, unknown>): { body: string; value: LedgerResult } {
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

