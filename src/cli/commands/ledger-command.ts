import { requireOrganization } from '../../organizations/organizations.js';
import { LedgerError, entryOperation, limitViewOf, newLedgerId, parseAmount, type LedgerKind, type LedgerResult } from '../../ledger/index.js';
import { creditLimits } from '../../resources/credit-limits.js';
import { formatMicros, parseTimestamp } from '../../domain/timestamp.js';
import { print, UsageError, type OutputOptions } from '../output.js';
import { publishAfterWrite } from '../publish-after-write.js';
import { withLedger } from '../with-ledger.js';

export interface LedgerFlags extends OutputOptions {
  org: string;
  limit: string;
  amount: string;
  id?: string;
  at?: string;
}

/** `draw` and `repay`: one ledger entry against a credit limit. */
export async function runLedgerCommand(kind: LedgerKind, flags: LedgerFlags): Promise<void> {
  const amount = parseAmount(flags.amount);
  if (!amount.ok) throw new UsageError(`--amount ${amount.reason}, got '${flags.amount}'`);
  let at: string | undefined;
  if (flags.at !== undefined) {
    const parsed = parseTimestamp(flags.at, 'from');
    if (!parsed.ok) throw new UsageError(`--at ${parsed.reason}, got '${flags.at}'`);
    at = formatMicros(parsed.micros);
  }
  if (flags.id !== undefined && (flags.id.length === 0 || flags.id.length > 255)) throw new UsageError('--id must be 1–255 characters');
  try {
    const result = await withLedger(async (ledger, store) => {
      const org = await requireOrganization(store, flags.org);
      // Idempotent by the entry's id (--id) instead of an Idempotency-Key.
      const id = flags.id ?? newLedgerId(kind);
      const operation = entryOperation(limitViewOf(creditLimits), { orgId: org.id, kind, id, limit: flags.limit, amount: amount.value, at, idGivenByCaller: true });
      const answer = await ledger.write({ operation });
      if (!answer.value) throw new Error(`${kind} ${id}: the ledger answered ${answer.status} without a result`);
      // Its ledger_entry.created and credit_limit.updated, listed at once even with no serve node running.
      if (answer.value.applied) await publishAfterWrite(store, flags.org);
      return answer.value;
    });
    print(flags, toJson(result), resultText(result));
  } catch (error) {
    if (flags.json && error instanceof LedgerError) print(flags, { error: error.code, message: error.message }, '');
    throw error;
  }
}

function toJson(result: LedgerResult) {
  return {
    id: result.id,
    object: result.kind,
    limit: result.limit,
    amount: Number(result.amount),
    at: result.at,
    applied: result.applied,
    capacity: Number(result.capacity),
    outstanding: Number(result.outstanding),
    balance: Number(result.balance),
    updated_at: result.updated_at,
  };
}

function resultText(result: LedgerResult): string {
  const head = result.applied
    ? `recorded ${result.kind} ${result.id} of ${result.amount} on ${result.limit}`
    : `${result.kind} ${result.id} (${result.amount} on ${result.limit} at ${result.at}) was already recorded; nothing changed`;
  return `${head}\n  ${result.limit}: outstanding ${result.outstanding}, balance ${result.balance}, capacity ${result.capacity} (updated ${result.updated_at})`;
}
