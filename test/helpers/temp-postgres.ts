import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const POSTGRES_BIN_DIRS = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin'];

/** Where initdb and pg_ctl live, or undefined (CI must have them: it fails instead). */
export function postgresBinDir(): string | undefined {
  const found = POSTGRES_BIN_DIRS.find((dir) => existsSync(path.join(dir, 'pg_ctl')));
  if (!found && process.env.CI) throw new Error(`CI needs the PostgreSQL server binaries (initdb, pg_ctl) in one of ${POSTGRES_BIN_DIRS.join(', ')}`);
  return found;
}

/** A PostgreSQL server of a test's own, on a temporary directory and a free port. */
export interface TempPostgres {
  readonly url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Sends `signal` to the server and every process it forked (SIGSTOP freezes the database, SIGCONT thaws it). */
  signal(signal: NodeJS.Signals): Promise<void>;
  /** Stops the server and deletes its directory. */
  destroy(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface TempPostgresOptions {
  /** Extra server settings passed as `-c name=value` (they win over the defaults), e.g. `{ max_connections: 4 }`. */
  settings?: Record<string, string | number>;
}

export async function createTempPostgres(binDir: string, tempOptions: TempPostgresOptions = {}): Promise<TempPostgres> {
  const dir = await mkdtemp(path.join(tmpdir(), 'lending-api-pg-'));
  const dataDir = path.join(dir, 'data');
  // initdb refuses to run as root: run the server binaries as the postgres user.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const pg = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(binDir, tool), ...args]) : run(path.join(binDir, tool), args);

  await pg('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const port = await freePort();
  const extra = Object.entries(tempOptions.settings ?? {}).map(([name, value]) => ` -c ${name}=${value}`).join('');
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c max_connections=50${extra}`;
  const start = async () => {
    await pg('pg_ctl', ['-D', dataDir, '-o', options, '-l', path.join(dir, 'server.log'), '-w', '-t', '30', 'start']);
  };
  const stop = async () => {
    await pg('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '30', 'stop']);
  };
  await start();
  let destroyed = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    signal: async (signal) => {
      const postmaster = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      const { stdout } = await run('pgrep', ['-P', String(postmaster)]).catch(() => ({ stdout: '' }));
      signalServer(postmaster, stdout.split('\n').filter(Boolean).map(Number), signal);
    },
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await pg('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Sends `signal` to a server's postmaster, then to the children it had a moment ago: a child may have
 * exited since (a backend whose session ended), which is no error (ESRCH); the postmaster gone is one.
 */
export function signalServer(postmaster: number, children: readonly number[], signal: NodeJS.Signals): void {
  process.kill(postmaster, signal);
  for (const pid of children) {
    try {
      process.kill(pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}
