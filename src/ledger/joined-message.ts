import type { Statement } from '../store/store.js';
import { joinedEventCausesStatement, type EventCause } from './event-context.js';
import { claimKeysStatement, type ClaimRequest, type LoneWriteEnd } from './idempotency-keys.js';
import { joinedEntries, lockLimitsStatement, type JoinedEntry } from './joined-entries.js';
import type { LedgerOperation } from './ledger-operation.js';

/** A lone write of a batch (ledger-writer.ts inOneMessage), in the order of its limit. */
export interface JoinCandidate {
  readonly operation: LedgerOperation;
  readonly claim: ClaimRequest;
  readonly cause: EventCause;
}

/**
 * The batch as a joined message, when every write of it can join (entries
 * with the same view, two or more): BEGIN, the claim of every key, the lock
 * of every limit (in uid order), the causes of their events, and the one
 * statement that writes them all and stores their answers; COMMIT. `ends`
 * reads, from the message's results, each write's end, in the order given.
 * Undefined when they cannot: then each goes as a lone write.
 */
export function joinedMessage(orgId: string, writes: readonly JoinCandidate[]): { statements: Statement[]; ends(results: readonly unknown[][]): LoneWriteEnd[] } | undefined {
  if (writes.length < 2) return undefined;
  const entries: JoinedEntry[] = [];
  for (const { operation } of writes) {
    const joinable = operation.joinable;
    if (!joinable || (entries.length > 0 && joinable.view !== entries[0]?.view)) return undefined;
    entries.push(joinable);
  }
  const [first] = entries;
  if (!first) return undefined;
  const joined = joinedEntries(
    first.view,
    orgId,
    entries.map(({ write }, n) => ({ write, claim: (writes[n] as JoinCandidate).claim })),
    201,
  );
  const statements = [
    claimKeysStatement(orgId, writes.map((write) => write.claim)),
    lockLimitsStatement(orgId, entries.map(({ write }) => write.limit)),
    joinedEventCausesStatement(
      entries.map(({ write }, n) => ({ objects: { credit_limit: write.limit, ledger_entry: write.id }, cause: (writes[n] as JoinCandidate).cause })),
    ),
    joined.statement,
  ];
  return { statements, ends: (results) => joined.ends(results[3] ?? []) };
}
