import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { haproxyConfig, patroniYaml, type PatroniLayout, type PatroniMemberLayout } from './patroni-config.js';
import { freePort } from './temp-postgres.js';

const run = promisify(execFile);

/** What the Patroni topology needs on this machine; CI installs them (.ci/run), elsewhere the tests are skipped. */
export const PATRONI_BINARIES = ['/usr/bin/patroni', '/usr/bin/patronictl', '/usr/bin/etcd', '/usr/sbin/haproxy'] as const;

export interface PatroniMember {
  readonly name: string;
  readonly port: number;
  readonly restUrl: string;
}

export interface ClusterMemberState {
  readonly name: string;
  readonly role: 'leader' | 'sync_standby' | 'replica' | string;
  readonly state: string;
  readonly port?: number;
  readonly timeline?: number;
}

export interface PatroniCluster {
  readonly members: readonly PatroniMember[];
  /** HAProxy's listeners: the leader, the synchronous standby, any standby. */
  readonly urls: { readonly primary: string; readonly sync: string; readonly replica: string };
  /** Patroni REST API base URLs, for a node's PATRONI_URL. */
  readonly restUrls: readonly string[];
  /** The cluster as Patroni reports it (GET /cluster on any member that answers). */
  state(): Promise<ClusterMemberState[]>;
  /** Waits until there is a running leader and a running synchronous standby; returns the state then. */
  healthy(timeoutMs?: number): Promise<ClusterMemberState[]>;
  /**
   * Each time healthy() found Patroni 3.0.2's /sync key still owned by a
   * member that is no longer the leader (then the leader never names a
   * synchronous standby again) and deleted it, as docs/scaling.md tells an
   * operator to: what it found.
   */
  readonly syncKeyRepairs: string[];
  /** Sends `signal` to a member's Patroni, or to its PostgreSQL (postmaster, or postmaster and every backend). */
  signalPatroni(name: string, signal: NodeJS.Signals): void;
  signalPostgres(name: string, signal: NodeJS.Signals, withChildren?: boolean): Promise<void>;
  /** Starts a member's Patroni again (after its process was killed). */
  startPatroni(name: string): void;
  /** Kills etcd (its data stays), and starts it again. */
  stopEtcd(): void;
  startEtcd(): void;
  patronictl(...args: string[]): Promise<string>;
  destroy(): Promise<void>;
}

async function postgresIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Three Patroni members, one etcd and one HAProxy, all on free loopback
 * ports, from the configuration of patroni-config.ts. Patroni and PostgreSQL
 * refuse root, so under root they run as the postgres user; Patroni's
 * scripts run by their own #!/usr/bin/python3 (a python3 earlier on PATH may
 * lack psycopg2).
 */
export async function startPatroniCluster(binDir: string, logs: (line: string) => void = () => {}): Promise<PatroniCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'lending-api-patroni-'));
  const ids = await postgresIds();
  if (ids) await chown(dir, ids.uid, ids.gid);
  const asPostgres = (binary: string, args: string[]): [string, string[]] =>
    ids ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];

  // The kernel may hand a port that was just closed out again: a REST API once got its member's PostgreSQL
  // port, and that PostgreSQL never started. Every port of the cluster is distinct.
  const taken = new Set<number>();
  const port = async (): Promise<number> => {
    for (;;) {
      const free = await freePort();
      if (taken.has(free)) continue;
      taken.add(free);
      return free;
    }
  };
  const etcdClient = await port();
  const etcdPeer = await port();
  const members: PatroniMemberLayout[] = [];
  for (const name of ['pg1', 'pg2', 'pg3']) {
    members.push({
      name,
      postgres: { host: '127.0.0.1', port: await port() },
      rest: { host: '127.0.0.1', port: await port() },
      dataDir: path.join(dir, name),
    });
  }
  const layout: PatroniLayout = {
    scope: 'lending-api-test',
    etcd: [`127.0.0.1:${etcdClient}`],
    binDir,
    members,
    haproxy: { host: '127.0.0.1', primary: await port(), sync: await port(), replica: await port() },
    testing: { socketDir: dir, pgpassDir: dir },
  };

  const children = new Map<string, ChildProcess>();
  const spawnLogged = (key: string, command: [string, string[]]) => {
    const child = spawn(command[0], command[1], { stdio: ['ignore', 'pipe', 'pipe'], detached: false });
    const write = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) logs(`[${key}] ${line}`);
    };
    child.stdout?.on('data', write);
    child.stderr?.on('data', write);
    children.set(key, child);
    return child;
  };

  const etcdDir = path.join(dir, 'etcd');
  await mkdir(etcdDir, { mode: 0o700 });
  if (ids) await chown(etcdDir, ids.uid, ids.gid);
  const startEtcd = () =>
    spawnLogged(
      'etcd',
      asPostgres('/usr/bin/etcd', [
        '--name=etcd0',
        `--data-dir=${etcdDir}`,
        `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-cluster=etcd0=http://127.0.0.1:${etcdPeer}`,
        '--initial-cluster-state=new',
        // Patroni's `etcd:` client speaks etcd's v2 API, whose leader-key update compares the holder (see patroni-config.ts).
        '--enable-v2=true',
        '--log-level=warn',
      ]),
    );
  const startPatroni = (name: string) => spawnLogged(name, asPostgres('/usr/bin/patroni', [path.join(dir, `${name}.yml`)]));
  const restUrls = members.map((m) => `http://${m.rest.host}:${m.rest.port}`);
  const postmasterPid = async (name: string) =>
    Number((await readFile(path.join(dir, name, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  /** Every process of the cluster killed (PostgreSQL's own too: they outlive Patroni), its directory deleted. */
  const destroy = async () => {
    for (const child of children.values()) if (child.pid) signalTree(child.pid, 'SIGCONT');
    for (const [key, child] of children) if (key !== 'etcd' && child.pid) signalTree(child.pid, 'SIGKILL');
    for (const member of members) {
      await postmasterPid(member.name)
        .then((pid) => signalTree(pid, 'SIGKILL'))
        .catch(() => {});
    }
    const etcd = children.get('etcd');
    if (etcd?.pid) signalTree(etcd.pid, 'SIGKILL');
    await sleep(500);
    await rm(dir, { recursive: true, force: true });
  };

  try {
    startEtcd();
    await waitFor(async () => (await fetch(`http://127.0.0.1:${etcdClient}/health`)).ok, 30_000, 'etcd healthy');
    for (const member of members) {
      const file = path.join(dir, `${member.name}.yml`);
      await writeFile(file, patroniYaml(layout, member));
      if (ids) await chown(file, ids.uid, ids.gid);
    }
    // The first member bootstraps the cluster; the others clone it once it leads.
    startPatroni('pg1');
    await waitFor(async () => (await fetch(`${restUrls[0]}/primary`)).status === 200, 120_000, 'pg1 leading');
    startPatroni('pg2');
    startPatroni('pg3');
    const haproxyFile = path.join(dir, 'haproxy.cfg');
    await writeFile(haproxyFile, haproxyConfig(layout));
    spawnLogged('haproxy', ['/usr/sbin/haproxy', ['-f', haproxyFile, '-db']]);
  } catch (error) {
    // A cluster that never came up leaves nothing running either.
    await destroy();
    throw error;
  }

  const state = async (): Promise<ClusterMemberState[]> => {
    for (const url of restUrls) {
      try {
        const response = await fetch(`${url}/cluster`, { signal: AbortSignal.timeout(1000) });
        if (response.ok) return ((await response.json()) as { members: ClusterMemberState[] }).members;
      } catch {
        // That member is down or frozen: ask the next.
      }
    }
    throw new Error('no Patroni member answers /cluster');
  };
  const patronictlConfig = path.join(dir, 'pg1.yml');

  /** A key of the cluster's in etcd's v2 store (Patroni's `etcd:` client): its value, or deleted. */
  const etcdKey = async (action: 'get' | 'delete', key: string): Promise<string | undefined> => {
    const response = await fetch(`http://127.0.0.1:${etcdClient}/v2/keys/service/${layout.scope}/${key}`, {
      method: action === 'get' ? 'GET' : 'DELETE',
      signal: AbortSignal.timeout(2000),
    });
    if (response.status === 404) return undefined;
    const body = (await response.json()) as { node?: { value?: string } };
    return body.node?.value;
  };
  const syncKeyRepairs: string[] = [];
  let staleSyncKeySince: number | undefined;
  /** Deletes a /sync key that has named a member other than the running leader for 15 s (see syncKeyRepairs). */
  const repairStaleSyncKey = async (members: readonly ClusterMemberState[]) => {
    const leader = members.find((m) => m.role === 'leader' && m.state === 'running')?.name;
    const sync = await etcdKey('get', 'sync').catch(() => undefined);
    const owner = sync === undefined ? undefined : (JSON.parse(sync) as { leader?: string }).leader;
    if (!leader || !owner || owner === leader) {
      staleSyncKeySince = undefined;
      return;
    }
    staleSyncKeySince ??= Date.now();
    if (Date.now() - staleSyncKeySince < 15_000) return;
    syncKeyRepairs.push(`/sync key ${sync} while ${leader} leads`);
    logs(`[test] deleting the stale /sync key ${sync} (leader ${leader})`);
    await etcdKey('delete', 'sync');
    staleSyncKeySince = undefined;
  };

  const cluster: PatroniCluster = {
    members: members.map((m) => ({ name: m.name, port: m.postgres.port, restUrl: `http://${m.rest.host}:${m.rest.port}` })),
    urls: {
      primary: `postgres://postgres@127.0.0.1:${layout.haproxy.primary}/postgres`,
      sync: `postgres://postgres@127.0.0.1:${layout.haproxy.sync}/postgres`,
      replica: `postgres://postgres@127.0.0.1:${layout.haproxy.replica}/postgres`,
    },
    restUrls,
    syncKeyRepairs,
    state,
    healthy: async (timeoutMs = 120_000) => {
      let last: ClusterMemberState[] = [];
      await waitFor(
        async () => {
          last = await state();
          await repairStaleSyncKey(last);
          const running = (role: string) => last.some((m) => m.role === role && m.state === 'running');
          if (!(running('leader') && running('sync_standby') && last.every((m) => m.state === 'running' || m.state === 'streaming'))) return false;
          // /cluster reads the members' keys in etcd, which outlive a killed member by up to ttl: each member's
          // own REST API must say its PostgreSQL runs (a member restarted after a kill is still starting).
          if (last.length !== members.length) return false;
          const answers = await Promise.all(restUrls.map((url) => fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined)));
          return answers.every((answer) => answer?.status === 200);
        },
        timeoutMs,
        () => `a healthy cluster (last seen: ${JSON.stringify(last)})`,
      );
      return last;
    },
    signalPatroni: (name, signal) => {
      const child = children.get(name);
      // Under runuser the Patroni process is runuser's child: signal the whole process group below runuser.
      if (child?.pid) signalTree(child.pid, signal);
    },
    signalPostgres: async (name, signal, withChildren = false) => {
      const pid = await postmasterPid(name);
      if (withChildren) signalTree(pid, signal);
      else process.kill(pid, signal);
    },
    startPatroni: (name) => {
      startPatroni(name);
    },
    stopEtcd: () => {
      const child = children.get('etcd');
      if (child?.pid) signalTree(child.pid, 'SIGKILL');
    },
    startEtcd: () => {
      startEtcd();
    },
    patronictl: async (...args) => {
      const [command, commandArgs] = asPostgres('/usr/bin/patronictl', ['-c', patronictlConfig, ...args]);
      const { stdout } = await run(command, commandArgs, { timeout: 60_000 });
      return stdout;
    },
    destroy,
  };
  return cluster;
}

/** `pid` and all its descendants (found through /proc), deepest first. */
function descendants(pid: number): number[] {
  let out: string;
  try {
    out = execFileSync('ps', ['-e', '-o', 'pid=,ppid=']).toString();
  } catch {
    return [pid];
  }
  const children = new Map<number, number[]>();
  for (const line of out.split('\n')) {
    const [child, parent] = line.trim().split(/\s+/).map(Number);
    if (child === undefined || parent === undefined || Number.isNaN(child)) continue;
    children.set(parent, [...(children.get(parent) ?? []), child]);
  }
  const all: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) walk(c);
    all.push(p);
  };
  walk(pid);
  return all;
}

function signalTree(pid: number, signal: NodeJS.Signals): void {
  for (const p of descendants(pid)) {
    try {
      process.kill(p, signal);
    } catch {
      // Already gone.
    }
  }
}

export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string | (() => string)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${typeof what === 'string' ? what : what()} not reached within ${timeoutMs} ms`);
    await sleep(200);
  }
}
