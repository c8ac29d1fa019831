import type { Statement } from '../store/store.js';
import { joinedEventCausesStatement, type EventCause } from './event-context.js';
import { claimKeysStatement, type ClaimRequest, type LoneWriteEnd } from './idempotency-keys.js';
import { joinedEntries, lockLimitsStatement, type JoinedEntry } from './joined-entries.js';
import { joinedLoans, type JoinedLoan } from './joined-loans.js';
import type { LedgerOperation } from './ledger-operation.js';

/** A lone write of a batch (ledger-writer.ts inOneMessage), in the order of its limit. */
export interface JoinCandidate {
  readonly operation: LedgerOperation;
  readonly claim: ClaimRequest;
  readonly cause: EventCause;
}

/** The status of every write a joined message makes: 201, created. */
export const JOINED_STATUS = 201;

/** The writes of a batch that one statement writes: one kind, one view. */
interface Family {
  readonly joinable: JoinedEntry | JoinedLoan;
  /** Indexes of its writes in the batch. */
  readonly members: number[];
}

interface FamilyStatement {
  readonly statement: Statement;
  readonly objects: readonly Record<string, string>[];
  ends(rows: readonly unknown[]): LoneWriteEnd[];
}

/**
 * The batch as a joined message, when every write of it can join (has
 * `joinable`) and it is not a single write that has its own lone statements
 * (`alone`): BEGIN, the claim of every key, the lock of every limit (in uid
 * order; none for a single limit), the causes of their events, and one statement per kind of write
 * (drawdowns and repayments; loans) that writes them all and stores their
 * answers; COMMIT. `ends` reads, from the message's results, each write's
 * end, in the order given. Undefined when they cannot: then each goes as a
 * lone write.
 */
export function joinedMessage(orgId: string, writes: readonly JoinCandidate[]): { statements: Statement[]; ends(results: readonly unknown[][]): LoneWriteEnd[] } | undefined {
  const [only] = writes;
  if (!only || (writes.length === 1 && only.operation.alone)) return undefined;
  const families = new Map<object, Family>();
  for (const [n, { operation }] of writes.entries()) {
    const joinable = operation.joinable;
    if (!joinable) return undefined;
    const key = joinable.kind === 'entry' ? joinable.view : joinable.views;
    let family = families.get(key);
    if (!family) families.set(key, (family = { joinable, members: [] }));
    family.members.push(n);
  }
  const claimOf = (n: number) => (writes[n] as JoinCandidate).claim;
  const joinableOf = (n: number) => (writes[n] as JoinCandidate).operation.joinable;
  const limits: string[] = [];
  const written = [...families.values()].map(({ joinable, members }): FamilyStatement & { members: number[] } => {
    if (joinable.kind === 'entry') {
      const entries = members.map((n) => ({ write: (joinableOf(n) as JoinedEntry).write, claim: claimOf(n) }));
      limits.push(...entries.map(({ write }) => write.limit));
      const objects = entries.map(({ write }) => ({ credit_limit: write.limit, ledger_entry: write.id }));
      return { ...joinedEntries(joinable.view, orgId, entries, JOINED_STATUS), objects, members };
    }
    const loans = members.map((n) => ({ write: (joinableOf(n) as JoinedLoan).write, claim: claimOf(n) }));
    limits.push(...loans.map(({ write }) => write.creditLimit));
    return { ...joinedLoans(joinable.views, orgId, loans, JOINED_STATUS), members };
  });
  const causes = written.flatMap(({ objects, members }) => objects.map((changed, i) => ({ objects: changed, cause: (writes[members[i] ?? 0] as JoinCandidate).cause })));
  const statements = [
    claimKeysStatement(
      orgId,
      writes.map((write) => write.claim),
    ),
    // One limit needs no lock of its own: its UPDATE takes it (a FOR UPDATE would write the row's lock to the WAL too).
    ...(limits.length > 1 ? [lockLimitsStatement(orgId, limits)] : []),
    joinedEventCausesStatement(causes),
    ...written.map(({ statement }) => statement),
  ];
  const firstWrite = statements.length - written.length;
  return {
    statements,
    ends: (results) => {
      const ends = new Array<LoneWriteEnd>(writes.length).fill({ kind: 'not-written' });
      written.forEach(({ ends: endsOf, members }, f) => {
        endsOf(results[firstWrite + f] ?? []).forEach((end, i) => {
          ends[members[i] ?? 0] = end;
        });
      });
      return ends;
    },
  };
}
