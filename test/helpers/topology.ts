import { execFile, spawn } from 'node:child_process';
import { chown, mkdtemp, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { spawnServer, type SpawnedServer } from './spawn-server.js';
import { missingProgramsMessage, PGBOUNCER_BIN, pgbouncerProgram } from './topology-prerequisites.js';
import { freePort } from './temp-postgres.js';

const run = promisify(execFile);

/**
 * A PostgreSQL replication topology of a test's own, on loopback ports: a
 * primary, a synchronous standby (`remote_apply` for the transactions that ask
 * for it) and an asynchronous one, both made with `pg_basebackup -R`, and
 * PgBouncers in front of any of them. Never the shared 5432 server.
 */

/** The application_name the synchronous standby streams under (named in synchronous_standby_names). */
export const SYNC_STANDBY_NAME = 'replica_sync';
export const ASYNC_STANDBY_NAME = 'replica_async';

/**
 * The primary's replication settings, as documented in docs/scaling.md:
 * only the one standby is synchronous, and only transactions that set
 * `synchronous_commit = remote_apply` themselves (the ledger's) wait for it.
 */
export const PRIMARY_SETTINGS: Readonly<Record<string, string>> = {
  wal_level: 'replica',
  max_wal_senders: '10',
  wal_keep_size: '256MB',
  synchronous_standby_names: `FIRST 1 (${SYNC_STANDBY_NAME})`,
  synchronous_commit: 'local',
};

const COMMON_SETTINGS: Readonly<Record<string, string>> = {
  listen_addresses: '127.0.0.1',
  fsync: 'off',
  max_connections: '100',
  hot_standby: 'on',
  hot_standby_feedback: 'on',
  wal_receiver_status_interval: '1s',
};

interface Owner {
  uid: number;
  gid: number;
}

async function postgresOwner(): Promise<Owner | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

/** Runs a server binary as the postgres user when we are root (initdb, postgres and pgbouncer refuse root). */
function asPostgres(owner: Owner | undefined, binary: string, args: string[]) {
  return owner ? run('runuser', ['-u', 'postgres', '--', binary, ...args]) : run(binary, args);
}

export interface PgNode {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly dataDir: string;
  start(): Promise<void>;
  /** Fast shutdown: connections are closed, the node stops. */
  stop(): Promise<void>;
  /** `pg_ctl promote`: a standby becomes a primary and accepts writes. */
  promote(): Promise<void>;
  /** Runs one statement on this node in a short-lived connection. */
  sql<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<Row[]>;
  log(): Promise<string>;
  destroy(): Promise<void>;
}

function optionsText(settings: Readonly<Record<string, string>>): string {
  // pg_ctl passes -o through a shell: quote every value.
  return Object.entries(settings)
    .map(([name, value]) => `-c "${name}=${value.replace(/"/g, '\\"')}"`)
    .join(' ');
}

async function makeNode(
  binDir: string,
  owner: Owner | undefined,
  name: string,
  dir: string,
  port: number,
  settings: Readonly<Record<string, string>>,
): Promise<PgNode> {
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  const pgCtl = (args: string[]) => asPostgres(owner, path.join(binDir, 'pg_ctl'), ['-D', dataDir, ...args]);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let destroyed = false;
  return {
    name,
    port,
    url,
    dataDir,
    start: async () => {
      const options = `-p ${port} -k ${dir} ${optionsText({ ...COMMON_SETTINGS, ...settings })}`;
      await pgCtl(['-o', options, '-l', logFile, '-w', '-t', '60', 'start']);
    },
    stop: async () => {
      await pgCtl(['-m', 'fast', '-w', '-t', '60', 'stop']);
    },
    promote: async () => {
      await pgCtl(['-w', '-t', '60', 'promote']);
    },
    sql: async <Row>(text: string, values: unknown[] = []) => {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
      await client.connect();
      try {
        return (await client.query(text, values)).rows as Row[];
      } finally {
        await client.end();
      }
    },
    log: () => readFile(logFile, 'utf8').catch(() => ''),
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await pgCtl(['-m', 'immediate', '-w', 'stop']).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function ownedTempDir(owner: Owner | undefined, prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  if (owner) await chown(dir, owner.uid, owner.gid);
  return dir;
}

export interface ReplicationTopology {
  readonly primary: PgNode;
  readonly syncReplica: PgNode;
  readonly asyncReplica: PgNode;
  /** Resolves once both standbys stream and have replayed everything the primary has written so far. */
  caughtUp(timeoutMs?: number): Promise<void>;
  destroy(): Promise<void>;
}

/** Starts a primary and two standbys; `prepare` runs on the primary before the base backups (e.g. migrations). */
export async function createReplicationTopology(binDir: string): Promise<ReplicationTopology> {
  const owner = await postgresOwner();
  const primaryDir = await ownedTempDir(owner, 'lending-api-primary-');
  await asPostgres(owner, path.join(binDir, 'initdb'), [
    '-D',
    path.join(primaryDir, 'data'),
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--no-sync',
    '--no-instructions',
  ]);
  const primary = await makeNode(binDir, owner, 'primary', primaryDir, await freePort(), PRIMARY_SETTINGS);
  const nodes: PgNode[] = [primary];
  try {
    await primary.start();
    const standby = async (name: string) => {
      const dir = await ownedTempDir(owner, `lending-api-${name}-`);
      const dataDir = path.join(dir, 'data');
      await asPostgres(owner, path.join(binDir, 'pg_basebackup'), [
        '-h',
        '127.0.0.1',
        '-p',
        String(primary.port),
        '-U',
        'postgres',
        '-D',
        dataDir,
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
        '--no-sync',
      ]);
      // -R wrote standby.signal and a primary_conninfo; this line (later wins) adds the name the primary knows it by.
      await appendFile(
        path.join(dataDir, 'postgresql.auto.conf'),
        `primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=${name}'\n`,
      );
      const node = await makeNode(binDir, owner, name, dir, await freePort(), {});
      nodes.push(node);
      await node.start();
      return node;
    };
    const syncReplica = await standby(SYNC_STANDBY_NAME);
    const asyncReplica = await standby(ASYNC_STANDBY_NAME);
    const topology: ReplicationTopology = {
      primary,
      syncReplica,
      asyncReplica,
      caughtUp: async (timeoutMs = 30_000) => {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const rows = await primary.sql<{ application_name: string; caught_up: boolean }>(
            `SELECT application_name, replay_lsn >= pg_current_wal_lsn() AS caught_up FROM pg_stat_replication WHERE state = 'streaming'`,
          );
          const done = [SYNC_STANDBY_NAME, ASYNC_STANDBY_NAME].every((n) => rows.some((r) => r.application_name === n && r.caught_up));
          if (done) return;
          if (Date.now() > deadline) throw new Error(`standbys did not catch up: ${JSON.stringify(rows)}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      },
      destroy: async () => {
        for (const node of [...nodes].reverse()) await node.destroy();
      },
    };
    await topology.caughtUp();
    return topology;
  } catch (error) {
    for (const node of [...nodes].reverse()) await node.destroy();
    throw error;
  }
}

export type PoolMode = 'transaction' | 'session';

export interface PgBouncer {
  readonly port: number;
  readonly mode: PoolMode;
  /** A URL to `database` through this PgBouncer. */
  url(database?: string, user?: string): string;
  log(): Promise<string>;
  destroy(): Promise<void>;
}

/** Starts a PgBouncer on a free loopback port in front of `target` (host and port of a PostgreSQL). */
export async function startPgBouncer(target: { port: number }, mode: PoolMode, pgbouncerBin = PGBOUNCER_BIN): Promise<PgBouncer> {
  const program = pgbouncerProgram(pgbouncerBin);
  if (!program.found) throw new Error(missingProgramsMessage([program]));
  const owner = await postgresOwner();
  const dir = await ownedTempDir(owner, `lending-api-pgbouncer-${mode}-`);
  const port = await freePort();
  const authFile = path.join(dir, 'users.txt');
  await writeFile(authFile, '"postgres" ""\n');
  if (owner) await chown(authFile, owner.uid, owner.gid);
  const configFile = path.join(dir, 'pgbouncer.ini');
  const logFile = path.join(dir, 'pgbouncer.log');
  await writeFile(
    configFile,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${target.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${authFile}`,
      // Other roles (a test suite's own) are looked up in pg_shadow through this one.
      'auth_user = postgres',
      // node-postgres sends its timeouts as startup parameters, which PgBouncer 1.18 refuses
      // unless ignored; behind PgBouncer they are set on the role instead (docs/scaling.md).
      'ignore_startup_parameters = statement_timeout, lock_timeout, idle_in_transaction_session_timeout',
      'admin_users = postgres',
      `pool_mode = ${mode}`,
      'max_client_conn = 500',
      'default_pool_size = 20',
      // Every suite has a role of its own, so a pool of its own: in session mode each keeps its server
      // connections after the suite ends (for server_idle_timeout, 10 minutes by default), and a whole run's
      // pools outgrew the server's max_connections. Pools close idle ones after 5 s, and together stay under
      // the server's limit (clients past it wait for one to close).
      'server_idle_timeout = 5',
      'max_db_connections = 80',
      'server_reset_query = DISCARD ALL',
      `logfile = ${logFile}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  const child = owner
    ? spawn('runuser', ['-u', 'postgres', '--', pgbouncerBin, configFile], { stdio: 'ignore' })
    : spawn(pgbouncerBin, [configFile], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const admin = async (command: string) => {
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/pgbouncer`, connectionTimeoutMillis: 2000 });
    await client.connect();
    try {
      // The admin console speaks only the simple query protocol.
      await client.query(command);
    } finally {
      await client.end();
    }
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await admin('SHOW VERSION');
      break;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`pgbouncer did not start: ${String(error)}\n${await readFile(logFile, 'utf8').catch(() => '')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  let destroyed = false;
  return {
    port,
    mode,
    url: (database = 'postgres', user = 'postgres') => `postgres://${user}@127.0.0.1:${port}/${database}`,
    log: () => readFile(logFile, 'utf8').catch(() => ''),
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A `serve` process on each database of a topology, and a way to stop them all. */
export interface NodePerDatabase {
  readonly onPrimary: SpawnedServer;
  /** With REPLICA_LIMITS=sync: it answers credit limits. */
  readonly onSync: SpawnedServer;
  /** With the default REPLICA_LIMITS=refuse. */
  readonly onAsync: SpawnedServer;
  stop(): Promise<void>;
}

export async function serveEachDatabase(topology: ReplicationTopology, env: Readonly<Record<string, string>> = {}): Promise<NodePerDatabase> {
  const serve = (url: string, replicaLimits?: string) =>
    spawnServer([], { DATABASE_URL: url, RATE_LIMIT_PER_MINUTE: '0', ...env, ...(replicaLimits ? { REPLICA_LIMITS: replicaLimits } : {}) });
  const [onPrimary, onSync, onAsync] = await Promise.all([
    serve(topology.primary.url),
    serve(topology.syncReplica.url, 'sync'),
    serve(topology.asyncReplica.url),
  ]);
  return {
    onPrimary,
    onSync,
    onAsync,
    stop: async () => {
      for (const server of [onPrimary, onSync, onAsync]) {
        server.child.kill('SIGTERM');
        await server.exited;
      }
    },
  };
}
