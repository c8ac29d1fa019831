import { readFile } from 'node:fs/promises';
import type { Queryable } from '../src/store/store.js';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on every Linux build this runs on). */
const TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system) a process has used so far, in seconds, from
 * /proc/<pid>/stat: what the operating system charged to it, whatever else
 * runs on the machine. 10 ms resolution.
 */
export async function processCpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 (utime) and 15 (stime) of proc(5) are the 12th and 13th after the name.
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** A process's peak resident set size so far (VmHWM), in MiB. */
export async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  return match?.[1] ? Number(match[1]) / 1024 : NaN;
}

/**
 * CPU time the database server's processes have used so far, in seconds:
 * every process pg_stat_activity lists (backends, the checkpointer, the
 * WAL writer…), read from /proc. NaN when the server does not run on this
 * machine (its pids are not local `postgres` processes).
 */
export async function databaseServerCpuSeconds(db: Queryable): Promise<number> {
  const rows = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity');
  let total = 0;
  let local = 0;
  for (const { pid } of rows) {
    // A backend that exited since the list was read used nothing more.
    const command = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
    if (command.trim() !== 'postgres') continue;
    local += 1;
    total += await processCpuSeconds(pid).catch(() => 0);
  }
  return local > rows.length / 2 ? total : Number.NaN;
}
