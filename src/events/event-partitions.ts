import type { Queryable, Store } from '../store/store.js';

/**
 * The day partitions of the event log and its deliveries and attempts
 * (migration 025, docs/storage.md "Retention"): one per UTC day and table,
 * named <table>_pYYYYMMDD, beside a DEFAULT partition that takes a row whose
 * day has none yet. A day of events and the same day of deliveries (by
 * their event's time) are dropped together; attempts by their own time.
 */
export interface PartitionedTable {
  readonly table: 'events' | 'webhook_deliveries' | 'webhook_attempts';
  readonly column: string;
}

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { table: 'events', column: 'created_at' },
  { table: 'webhook_deliveries', column: 'event_created_at' },
  { table: 'webhook_attempts', column: 'created_at' },
];

/** Days created ahead of today (UTC): writes land in a day partition even if no node runs the job for two days. */
export const PARTITION_DAYS_AHEAD = 2;

/**
 * How long partition DDL waits for each lock it takes (CREATE and DROP of a
 * partition take the parent's exclusively). A waiting exclusive lock queues
 * every later read and write of the table behind it, so the wait is short:
 * past it, the run gives up on that partition and the next run retries.
 */
export const PARTITION_LOCK_TIMEOUT = '200ms';

const DAY_MS = 86_400_000;
const DUPLICATE_TABLE = '42P07';
const OVERLAPPING_PARTITION = '42P17';
const DEFAULT_HOLDS_ROWS = '23514';
const LOCK_NOT_AVAILABLE = '55P03';
const DEADLOCK_DETECTED = '40P01';
const UNDEFINED_TABLE = '42P01';

/** The UTC day (midnight) of a time. */
export function dayOf(at: Date): Date {
  return new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS);
}

export function partitionName(table: string, day: Date): string {
  return `${table}_p${day.toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The day a partition named by partitionName holds; undefined for any other name (the default partition). */
export function partitionDay(table: string, name: string): Date | undefined {
  const match = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})$`).exec(name);
  return match ? new Date(`${match[1]}-${match[2]}-${match[3]}T00:00:00Z`) : undefined;
}

/** The table's day partitions, oldest first. */
export async function dayPartitions(db: Queryable, table: string): Promise<{ name: string; day: Date }[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1) ORDER BY c.relname`,
    [table],
  );
  return rows.flatMap(({ name }) => {
    const day = partitionDay(table, name);
    return day ? [{ name, day }] : [];
  });
}

export interface EnsuredPartitions {
  readonly created: string[];
  /** Days whose rows are already in the default partition: left there (row pruning removes them in time). */
  readonly skipped: string[];
  /** Partitions not created because a lock was not granted in time: the next run tries again. */
  readonly busy: string[];
}

const dayBounds = (day: Date): [string, string] => [day.toISOString(), new Date(day.getTime() + DAY_MS).toISOString()];

/**
 * Creates the day partitions from today to PARTITION_DAYS_AHEAD days ahead
 * that do not exist yet. Every node runs it: one that finds a partition
 * just created by another goes on. A day the default partition already has
 * rows of gets no partition (PostgreSQL refuses it): those rows stay where
 * they are and are pruned row by row.
 */
export async function ensureDayPartitions(store: Store, now = new Date(), ahead = PARTITION_DAYS_AHEAD): Promise<EnsuredPartitions> {
  const created: string[] = [];
  const skipped: string[] = [];
  const busy: string[] = [];
  for (const { table, column } of PARTITIONED_TABLES) {
    const existing = new Set((await dayPartitions(store, table)).map((partition) => partition.name));
    for (let offset = 0; offset <= ahead; offset += 1) {
      const day = new Date(dayOf(now).getTime() + offset * DAY_MS);
      const name = partitionName(table, day);
      if (existing.has(name)) continue;
      // CREATE would scan the default partition under the parent's exclusive lock, only to be refused: ask first, unlocked.
      const [held] = await store.query<{ held: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM ${table}_default WHERE ${column} >= $1 AND ${column} < $2) AS held`,
        dayBounds(day),
      );
      if (held?.held) {
        skipped.push(name);
        continue;
      }
      const sql =
        `CREATE TABLE ${name} PARTITION OF ${table} ` +
        `FOR VALUES FROM ('${day.toISOString()}') TO ('${new Date(day.getTime() + DAY_MS).toISOString()}')`;
      try {
        await store.transaction(async (tx) => {
          await tx.exec(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`);
          await tx.exec(sql);
        });
        created.push(name);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code === DUPLICATE_TABLE || code === OVERLAPPING_PARTITION) continue;
        if (code === DEFAULT_HOLDS_ROWS) {
          skipped.push(name);
          continue;
        }
        if (code === LOCK_NOT_AVAILABLE || code === DEADLOCK_DETECTED) {
          busy.push(name);
          continue;
        }
        throw error;
      }
    }
  }
  return { created, skipped, busy };
}

export interface DroppedPartitions {
  readonly dropped: string[];
  /** Days past the retention kept because a delivery of one of their events is still pending. */
  readonly kept: string[];
  /** Partitions whose lock was not granted within PARTITION_LOCK_TIMEOUT: the next run tries again. */
  readonly busy: string[];
}

/**
 * Drops the day partitions wholly older than `retentionDays` (their day
 * ended before now − retention). A day of events goes with the same day of
 * deliveries, and only when none of those deliveries is pending (the row
 * pruning kept an event while a delivery of it was pending: such a day
 * stays until it is delivered, given up or cancelled, and the row pruning
 * removes its finished events meanwhile). Attempts by their own day.
 * Checked under the parents' exclusive locks: no resend can queue a
 * delivery of the day between the check and the drop.
 */
export async function dropExpiredPartitions(store: Store, retentionDays: number, now = new Date()): Promise<DroppedPartitions> {
  const cutoff = now.getTime() - retentionDays * DAY_MS;
  const expired = async (table: string) => (await dayPartitions(store, table)).filter(({ day }) => day.getTime() + DAY_MS <= cutoff);
  const result: DroppedPartitions = { dropped: [], kept: [], busy: [] };
  const deliveries = new Set((await expired('webhook_deliveries')).map(({ name }) => name));
  for (const { name, day } of await expired('events')) {
    const delivery = partitionName('webhook_deliveries', day);
    const outcome = await dropLocked(store, ['events', 'webhook_deliveries'], async (tx) => {
      // Asked of the parent, so a pending delivery of the day held by the default partition keeps its event too.
      const [pending] = await tx.query<{ pending: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE event_created_at >= $1 AND event_created_at < $2 AND state = 'pending') AS pending`,
        dayBounds(day),
      );
      if (pending?.pending) return 'kept';
      return deliveries.has(delivery) ? [delivery, name] : [name];
    });
    record(result, name, outcome);
  }
  for (const { name } of await expired('webhook_attempts')) {
    record(result, name, await dropLocked(store, ['webhook_attempts'], async () => [name]));
  }
  return result;
}

type DropOutcome = string[] | 'kept' | 'busy';

function record(result: DroppedPartitions, name: string, outcome: DropOutcome): void {
  if (outcome === 'kept') result.kept.push(name);
  else if (outcome === 'busy') result.busy.push(name);
  else result.dropped.push(...outcome);
}

/** In one transaction: the parents locked (ONLY: not their partitions), then `choose` says which partitions to drop. */
async function dropLocked(store: Store, parents: readonly string[], choose: (tx: Queryable) => Promise<string[] | 'kept'>): Promise<DropOutcome> {
  try {
    return await store.transaction(async (tx) => {
      await tx.exec(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`);
      await tx.exec(`LOCK TABLE ${parents.map((parent) => `ONLY ${parent}`).join(', ')} IN ACCESS EXCLUSIVE MODE`);
      const chosen = await choose(tx);
      if (chosen !== 'kept') await tx.exec(`DROP TABLE ${chosen.join(', ')}`);
      return chosen;
    });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    // A lock not granted in time, or this run chosen as a deadlock's victim: the next run tries again.
    if (code === LOCK_NOT_AVAILABLE || code === DEADLOCK_DETECTED) return 'busy';
    // Another node dropped it first.
    if (code === UNDEFINED_TABLE) return [];
    throw error;
  }
}
