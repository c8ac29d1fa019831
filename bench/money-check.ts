/**
 * What a burst must leave true in the ledger, whatever the answers were:
 * every limit's outstanding equals the sum of its entries, every 201 names an
 * entry that exists, and each logical write (by its reference) is recorded
 * at most once — exactly once when the client was told it was recorded.
 */
import type { Queryable } from '../src/store/store.js';
import { saysNothingRan, type Answer, type LogicalWrite } from './burst-client.js';

export interface MoneyCheck {
  /** Limits of the organization whose outstanding differs from the sum of their entries. */
  readonly limitsOff: number;
  readonly limitsChecked: number;
  /** 201s (and replays) whose entry is not in the ledger. */
  readonly missing201: number;
  readonly answered201: number;
  /** Logical writes recorded more than once. */
  readonly duplicated: number;
  /** Logical writes whose final answer said recorded (201 or its replay) but that have no entry. */
  readonly lost: number;
  /** Writes answered "nothing ran" (503 service_unavailable/overloaded) at least once that the ledger holds nonetheless, before any retry. */
  readonly lyingAnswers: number;
  readonly saidNothingRan: number;
}

/** Entries per reference, for the references given. */
export async function entriesByReference(db: Queryable, orgId: string, references: readonly string[]): Promise<Map<string, number>> {
  const rows = await db.query<{ reference: string; n: string }>(
    `SELECT reference, count(*)::text AS n FROM ledger_entries WHERE org_id = $1 AND reference = ANY($2::text[]) GROUP BY reference`,
    [orgId, references],
  );
  return new Map(rows.map((row) => [row.reference, Number(row.n)]));
}

/**
 * `finalAnswers`: each logical write's last answer; `nothingRan`: the writes
 * that were answered 503 service_unavailable/overloaded with the ledger
 * counted right then (`recordedWhenAnswered`), before the client retried.
 */
export async function checkMoney(
  db: Queryable,
  orgId: string,
  finalAnswers: ReadonlyMap<LogicalWrite, Answer>,
  lyingAnswers = 0,
  saidNothingRan = 0,
): Promise<MoneyCheck> {
  const [limits] = await db.query<{ checked: string; off: string }>(
    `SELECT count(*)::text AS checked, count(*) FILTER (WHERE l.outstanding <> COALESCE(s.total, 0))::text AS off
       FROM credit_limits l
       LEFT JOIN (SELECT limit_id, sum(CASE kind WHEN 'drawdown' THEN amount ELSE -amount END) AS total
                    FROM ledger_entries WHERE org_id = $1 GROUP BY limit_id) s ON s.limit_id = l.id
      WHERE l.org_id = $1`,
    [orgId],
  );
  const recorded = [...finalAnswers.values()].filter((answer) => answer.status === 201 && answer.entryId !== undefined);
  const ids = [...new Set(recorded.map((answer) => answer.entryId as string))];
  const [present] = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ledger_entries WHERE org_id = $1 AND id = ANY($2::text[])`, [orgId, ids]);
  const counts = await entriesByReference(db, orgId, [...finalAnswers.keys()].map((write) => write.reference));
  let duplicated = 0;
  let lost = 0;
  for (const [write, answer] of finalAnswers) {
    const n = counts.get(write.reference) ?? 0;
    if (n > 1) duplicated += 1;
    if (answer.status === 201 && n === 0) lost += 1;
  }
  return {
    limitsOff: Number(limits?.off ?? 0),
    limitsChecked: Number(limits?.checked ?? 0),
    missing201: ids.length - Number(present?.n ?? 0),
    answered201: ids.length,
    duplicated,
    lost,
    lyingAnswers,
    saidNothingRan,
  };
}

/** The writes answered "nothing ran" that the ledger holds anyway (checked before any retry with the key). */
export async function lyingNothingRan(db: Queryable, orgId: string, answers: ReadonlyMap<LogicalWrite, Answer>): Promise<{ lying: number; said: number }> {
  const said = [...answers].filter(([, answer]) => saysNothingRan(answer)).map(([write]) => write);
  const counts = await entriesByReference(db, orgId, said.map((write) => write.reference));
  return { lying: said.filter((write) => (counts.get(write.reference) ?? 0) > 0).length, said: said.length };
}

export function describeMoney(check: MoneyCheck): string {
  const ok =
    check.limitsOff === 0 && check.missing201 === 0 && check.duplicated === 0 && check.lost === 0 && check.lyingAnswers === 0 ? 'ok' : '**NOT OK**';
  return (
    `money ${ok}: ${check.limitsOff} of ${check.limitsChecked} limits off their entries; ${check.answered201 - check.missing201}/${check.answered201} entries of 201s present; ` +
    `${check.lost} lost, ${check.duplicated} duplicated; ${check.lyingAnswers} of ${check.saidNothingRan} "nothing ran" answers committed`
  );
}

/** PostgreSQL's deadlock count for the current database. */
export async function deadlocks(db: Queryable): Promise<number> {
  const [row] = await db.query<{ n: string }>(`SELECT deadlocks::text AS n FROM pg_stat_database WHERE datname = current_database()`);
  return Number(row?.n ?? 0);
}
