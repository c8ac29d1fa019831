import { readdir, readFile } from 'node:fs/promises';
import type { Queryable } from '../src/store/store.js';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ). */
const TICKS_PER_SECOND = 100;

/** utime, stime, cutime, cstime and ppid of a process, from /proc/<pid>/stat. */
async function statOf(pid: number): Promise<{ ppid: number; own: number; children: number } | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  // Fields after the command name (which may hold spaces): state, ppid, … utime (12th), stime, cutime, cstime.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    ppid: Number(fields[1]),
    own: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND,
    children: (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND,
  };
}

/**
 * The database server's CPU so far, in seconds, exited backends included:
 * the postmaster's own time and what it reaped from children that ended
 * (cutime + cstime), plus every live child's. pgbench's backends end with
 * its run, so a count over pg_stat_activity (process-stats.ts) would miss
 * them. NaN when the server is not on this machine.
 */
export async function serverTreeCpuSeconds(db: Queryable): Promise<number> {
  const [row] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const backend = row ? await statOf(row.pid) : undefined;
  if (!backend) return Number.NaN;
  const postmaster = await statOf(backend.ppid);
  const comm = await readFile(`/proc/${backend.ppid}/comm`, 'utf8').catch(() => '');
  if (!postmaster || !comm.trim().startsWith('postgres')) return Number.NaN;
  let total = postmaster.own + postmaster.children;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const child = await statOf(Number(entry));
    if (child?.ppid === backend.ppid) total += child.own;
  }
  return total;
}

/** The server's WAL position (bytes since its start of time). */
export async function walPosition(db: Queryable): Promise<bigint> {
  const [row] = await db.query<{ lsn: string }>("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::text AS lsn");
  return BigInt(row?.lsn ?? '0');
}

export interface StatementCost {
  readonly query: string;
  readonly calls: number;
  readonly totalMs: number;
  readonly rows: number;
  readonly walBytes: number;
  /** False for a statement run inside another (a trigger's). */
  readonly topLevel: boolean;
}

/** Whether pg_stat_statements can be read in this database (the server must preload it). */
export async function statementStatsReady(db: Queryable): Promise<boolean> {
  try {
    await db.exec('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await db.query('SELECT pg_stat_statements_reset()');
    return true;
  } catch {
    return false;
  }
}

/** pg_stat_statements of this database since its reset, the costliest first (nested statements: triggers' too). */
export async function statementCosts(db: Queryable, limit = 25): Promise<StatementCost[]> {
  const rows = await db.query<{ query: string; calls: string; total_ms: string; rows: string; wal_bytes: string; toplevel: boolean }>(
    `SELECT s.query, s.calls::text, (s.total_exec_time + s.total_plan_time)::text AS total_ms, s.rows::text, s.wal_bytes::text, s.toplevel
       FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = current_database() AND s.query !~ '^(CHECKPOINT|SELECT pg_stat_statements_reset|SELECT \\(pg_current_wal_lsn|SELECT pg_backend_pid)'
      ORDER BY s.total_exec_time DESC LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({ query: r.query, calls: Number(r.calls), totalMs: Number(r.total_ms), rows: Number(r.rows), walBytes: Number(r.wal_bytes), topLevel: r.toplevel }));
}
