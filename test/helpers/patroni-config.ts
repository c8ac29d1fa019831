/**
 * The Patroni + etcd + HAProxy configuration lending-api recommends
 * (docs/scaling.md), as text: the topology tests start their cluster from
 * exactly this, and `node --import tsx test/helpers/patroni-config.ts`
 * prints it for the documentation, so the two cannot drift apart.
 */

export interface PatroniMemberLayout {
  readonly name: string;
  /** Address PostgreSQL listens on and is reached at (host:port). */
  readonly postgres: { readonly host: string; readonly port: number };
  /** Patroni's REST API (health checks, /cluster). */
  readonly rest: { readonly host: string; readonly port: number };
  readonly dataDir: string;
}

export interface PatroniLayout {
  readonly scope: string;
  /** etcd client endpoints, host:port. */
  readonly etcd: readonly string[];
  readonly binDir: string;
  readonly members: readonly PatroniMemberLayout[];
  /** HAProxy listeners: where nodes connect for the leader, the synchronous standby, and any standby. */
  readonly haproxy: { readonly host: string; readonly primary: number; readonly sync: number; readonly replica: number };
  /** Test-only server settings (fsync off, sockets in the test's directory); never in production. */
  readonly testing?: { readonly socketDir: string; readonly pgpassDir: string };
}

/**
 * The cluster-wide settings Patroni keeps in etcd (bootstrap.dcs). Why each:
 * - ttl 5 / loop_wait 1 / retry_timeout 2 (Patroni's rule: loop_wait +
 *   2 × retry_timeout <= ttl): a frozen leader cannot be told from a slow
 *   one until its lock expires, 4–5 s after its last renewal; the promoted
 *   standby then spends up to 2 s asking the frozen member's REST API
 *   (Patroni's fixed timeout): writes were back 4.5–4.8 s after the freeze.
 *   With ttl 10 / loop_wait 2 they took 10–13 s, past the 10 s target. The price:
 *   a leader whose Patroni cannot renew for ~4 s is failed over (an etcd
 *   outage alone does not: failsafe_mode). Patroni releases later than
 *   3.0.x raise ttl below 20 to 20 (docs/scaling.md).
 * - primary_start_timeout 0: a leader whose postmaster dies is failed over at
 *   once, not restarted in place (Debian's Patroni 3.0.2 otherwise restarts it).
 * - synchronous_mode: only the synchronous standby may be promoted, so no
 *   acknowledged ledger commit (remote_apply) is lost on failover.
 * - synchronous_mode_strict: a commit is never acknowledged with no standby
 *   holding it: with every standby gone, writes wait (503) rather than
 *   succeed on one server whose disk might be the next thing lost.
 * - failsafe_mode: etcd unreachable does not demote a leader that still
 *   reaches every member (no failover storm when etcd blips).
 * - synchronous_commit = remote_apply server-wide: Patroni then admits a new
 *   synchronous standby only once it has *applied* (replay_lsn), not merely
 *   flushed, the WAL of every commit acknowledged before it was named; the
 *   ledger asks for remote_apply itself anyway.
 * - use_slots false: Patroni 3.0.2 creates a new leader's replication slots
 *   only once its promotion task is done, so every standby's first attempts
 *   to stream from it failed ("replication slot does not exist") for 1–3 s,
 *   and strict mode holds every commit until a standby streams: that was
 *   most of a failover's outage. The slots protected little: Patroni drops
 *   the slot of a member whose key has expired, ttl (5 s) after it is lost.
 *   WAL for standbys is kept by wal_keep_size instead (size it for the
 *   longest standby outage to ride out; past it, `patronictl reinit`).
 * - wal_retrieve_retry_interval 1s (default 5s): how long a standby waits
 *   before trying its WAL source again once it failed (the old leader gone,
 *   the new one not promoted yet); strict mode holds every commit until a
 *   standby streams, so the default's 5 s was up to 5 s more outage.
 */
export const DCS_SETTINGS = {
  ttl: 5,
  loop_wait: 1,
  retry_timeout: 2,
  maximum_lag_on_failover: 1048576,
  primary_start_timeout: 0,
  synchronous_mode: true,
  synchronous_mode_strict: true,
  failsafe_mode: true,
} as const;

const SERVER_SETTINGS: Readonly<Record<string, string | number>> = {
  synchronous_commit: 'remote_apply',
  wal_log_hints: 'on',
  hot_standby_feedback: 'on',
  wal_keep_size: '256MB',
  wal_receiver_status_interval: '1s',
  wal_retrieve_retry_interval: '1s',
  max_connections: 100,
};

const yamlScalar = (value: string | number | boolean) =>
  typeof value === 'string' && !/^[A-Za-z0-9_./:@-]+$/.test(value) ? `'${value.replace(/'/g, "''")}'` : String(value);

function yamlMap(entries: Readonly<Record<string, string | number | boolean>>, indent: string): string {
  return Object.entries(entries)
    .map(([key, value]) => `${indent}${key}: ${yamlScalar(value)}`)
    .join('\n');
}

/** patroni.yml of one member. */
export function patroniYaml(layout: PatroniLayout, member: PatroniMemberLayout): string {
  const server = layout.testing ? { ...SERVER_SETTINGS, fsync: 'off' } : SERVER_SETTINGS;
  const local: Record<string, string> = layout.testing ? { unix_socket_directories: layout.testing.socketDir } : {};
  const pgpass = layout.testing ? `${layout.testing.pgpassDir}/pgpass-${member.name}` : '/var/lib/postgresql/.pgpass-patroni';
  const auth = layout.testing
    ? `    superuser:\n      username: postgres\n    replication:\n      username: postgres\n    rewind:\n      username: postgres`
    : `    superuser:\n      username: postgres\n      password: CHANGE-ME\n    replication:\n      username: replicator\n      password: CHANGE-ME\n    rewind:\n      username: rewinder\n      password: CHANGE-ME`;
  const hba = layout.testing
    ? ['host replication postgres 127.0.0.1/32 trust', 'host all all 127.0.0.1/32 trust']
    : ['host replication replicator 10.0.0.0/8 scram-sha-256', 'host all all 10.0.0.0/8 scram-sha-256'];
  return `scope: ${layout.scope}
name: ${member.name}
restapi:
  listen: ${member.rest.host}:${member.rest.port}
  connect_address: ${member.rest.host}:${member.rest.port}
etcd:
  hosts: ${layout.etcd.join(',')}
bootstrap:
  dcs:
${yamlMap(DCS_SETTINGS, '    ')}
    postgresql:
      use_pg_rewind: true
      use_slots: false
      parameters:
${yamlMap(server, '        ')}
  initdb:
    - encoding: UTF8
postgresql:
  listen: ${member.postgres.host}:${member.postgres.port}
  connect_address: ${member.postgres.host}:${member.postgres.port}
  data_dir: ${member.dataDir}
  bin_dir: ${layout.binDir}
  pgpass: ${pgpass}
  authentication:
${auth}
${Object.keys(local).length ? `  parameters:\n${yamlMap(local, '    ')}\n` : ''}  pg_hba:
${hba.map((line) => `    - ${line}`).join('\n')}
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
`;
}

/**
 * haproxy.cfg: one listener per role, each routing by Patroni's REST health
 * check of every member. A member that fails two checks (1 s apart, the
 * second 0.5 s after the first failure) is marked down and its sessions are
 * cut (on-marked-down shutdown-sessions), so no node keeps writing to a
 * demoted leader; one good check brings it back, and a member that is down
 * is checked every 0.5 s, so a new leader is admitted within 0.5 s.
 * A connection refused by a member that died since its last check is
 * retried at once on another member (redispatch on every retry), not three
 * times on the dead one with HAProxy's 1 s pause between tries: a node's
 * connection attempt gives up after 800 ms.
 */
export function haproxyConfig(layout: PatroniLayout): string {
  const listener = (name: string, port: number, check: string) => `listen ${name}
  bind ${layout.haproxy.host}:${port}
  option httpchk
  http-check send meth OPTIONS uri ${check}
  http-check expect status 200
  default-server inter 1s fastinter 500ms downinter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
${layout.members.map((m) => `  server ${m.name} ${m.postgres.host}:${m.postgres.port} check port ${m.rest.port} addr ${m.rest.host}`).join('\n')}
`;
  // Tests log every session (which server, how it ended) to read a failed run; production logs per its own syslog set-up.
  const log = layout.testing ? { global: '  log stdout format raw local0 info\n', defaults: '  log global\n  option tcplog\n' } : { global: '', defaults: '' };
  return `global
  maxconn 1000
${log.global}
defaults
  mode tcp
${log.defaults}  retries 3
  option redispatch 1
  timeout connect 1s
  timeout client 30m
  timeout server 30m
  timeout check 1s

${listener('primary', layout.haproxy.primary, '/primary')}
${listener('sync', layout.haproxy.sync, '/sync')}
${listener('replica', layout.haproxy.replica, '/replica')}`;
}

/** The production example the documentation shows: three hosts, etcd on each, HAProxy beside the nodes. */
export const EXAMPLE_LAYOUT: PatroniLayout = {
  scope: 'lending-api',
  etcd: ['10.0.0.11:2379', '10.0.0.12:2379', '10.0.0.13:2379'],
  binDir: '/usr/lib/postgresql/15/bin',
  members: [1, 2, 3].map((n) => ({
    name: `pg${n}`,
    postgres: { host: `10.0.0.1${n}`, port: 5432 },
    rest: { host: `10.0.0.1${n}`, port: 8008 },
    dataDir: '/var/lib/postgresql/15/main',
  })),
  haproxy: { host: '0.0.0.0', primary: 5000, sync: 5001, replica: 5002 },
};

/** The block docs/scaling.md shows between its patroni-config markers. */
export function documentedConfig(): string {
  const first = EXAMPLE_LAYOUT.members[0]!;
  return [
    `\`/etc/patroni/patroni.yml\` on ${first.name} (${EXAMPLE_LAYOUT.members.slice(1).map((m) => m.name).join(' and ')} differ only in \`name\` and addresses):`,
    '',
    '```yaml',
    patroniYaml(EXAMPLE_LAYOUT, first).trimEnd(),
    '```',
    '',
    '`/etc/haproxy/haproxy.cfg`:',
    '',
    '```',
    haproxyConfig(EXAMPLE_LAYOUT).trimEnd(),
    '```',
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(`${documentedConfig()}\n`);
