import type { PatroniRest } from './patroni-rest.js';
import type { Queryable, Store } from './store.js';

/**
 * What a node on a hot standby does with credit limits, whose outstanding and
 * balance must be real time:
 * - `refuse` (default): a standby may lag, so limits are not answered from it.
 * - `sync`: the operator declares this standby the primary's synchronous one
 *   (named alone in `synchronous_standby_names`; the ledger commits with
 *   `remote_apply`), so no drawdown or repayment returns success before this
 *   standby shows it: limits are answered from it.
 * A node on the primary always answers them. Under Patroni (PATRONI_URL) no
 * declaration is needed: a standby answers them while Patroni lists it as the
 * cluster's running synchronous standby.
 */
export type ReplicaLimits = 'refuse' | 'sync';
export const REPLICA_LIMITS_MODES: readonly ReplicaLimits[] = ['refuse', 'sync'];

export interface NodeRoleState {
  readonly role: 'primary' | 'replica';
  /** Whether credit limits (real-time fields) are answered from this node's database. */
  readonly serves_limits: boolean;
  /** On a standby: WAL received but not yet applied, in bytes; null on a primary. */
  readonly lag_bytes: number | null;
  /** On a standby: age of the last applied transaction while WAL is waiting to be applied (0 when caught up); null on a primary. */
  readonly lag_seconds: number | null;
  /** On a standby: the WAL receiver's status (`streaming` while connected to its primary), or null when it is not running. */
  readonly wal_receiver: string | null;
}

interface ProbeRow {
  in_recovery: boolean;
  server_address: string | null;
  server_port: number | null;
  receiver: string | null;
  lag_bytes: string | null;
  lag_seconds: string | null;
}

const PROBE = `SELECT pg_is_in_recovery() AS in_recovery, host(inet_server_addr()) AS server_address, inet_server_port() AS server_port,
  (SELECT status FROM pg_stat_wal_receiver) AS receiver,
  CASE WHEN pg_is_in_recovery() THEN pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::text END AS lag_bytes,
  CASE WHEN pg_is_in_recovery() THEN
    CASE WHEN pg_last_wal_receive_lsn() IS NULL OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN '0'
         ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::text END
  END AS lag_seconds`;

const PRIMARY: NodeRoleState = { role: 'primary', serves_limits: true, lag_bytes: null, lag_seconds: null, wal_receiver: null };

/**
 * Whether this node's database is a primary or a standby, re-read at most
 * once per `maxAgeMs` (a promotion is seen within that bound, no restart).
 * The embedded store is always a primary.
 */
export class NodeRole {
  private known: { state: NodeRoleState; at: number } | undefined;
  private probing: Promise<NodeRoleState> | undefined;

  constructor(
    private readonly store: Store,
    private readonly replicaLimits: ReplicaLimits = 'refuse',
    private readonly maxAgeMs = 1000,
    private readonly now: () => number = Date.now,
    /** Patroni's REST API: when given, it (not `replicaLimits`) says whether a standby is the synchronous one. */
    private readonly patroni?: PatroniRest,
  ) {}

  /** The state last read, if it is still fresh (metrics; never probes). */
  get lastKnown(): NodeRoleState | undefined {
    return this.known && this.now() - this.known.at < this.maxAgeMs ? this.known.state : undefined;
  }

  /**
   * Why a node whose database is unreachable cannot answer credit limits,
   * when Patroni can tell: no member is its synchronous standby (for a few
   * seconds after a failover, until Patroni names one). Undefined otherwise.
   */
  async limitsOutageReason(): Promise<string | undefined> {
    if (!this.patroni && this.replicaLimits !== 'sync') return undefined;
    if ((await this.patroni?.hasSynchronousStandby()) !== false) return undefined;
    return 'Patroni names no synchronous standby yet (after a failover it names one within seconds); until then credit limits are answered only by nodes on the leader';
  }

  /**
   * The role as of at most `maxAgeMs` ago; probes the database when older
   * (through `db`: a request's view of the store, within its budget).
   * Rejects when it is unreachable.
   */
  async current(db: Queryable = this.store): Promise<NodeRoleState> {
    if (this.store.kind === 'pglite') return PRIMARY;
    if (this.known && this.now() - this.known.at < this.maxAgeMs) return this.known.state;
    return this.probe(db);
  }

  /** Probes the database now (the readiness check), sharing a probe already under way. */
  probe(db: Queryable = this.store): Promise<NodeRoleState> {
    if (this.store.kind === 'pglite') return Promise.resolve(PRIMARY);
    this.probing ??= this.read(db).finally(() => (this.probing = undefined));
    return this.probing;
  }

  private async read(db: Queryable): Promise<NodeRoleState> {
    try {
      const [row] = await db.query<ProbeRow>(PROBE);
      const state: NodeRoleState = !row?.in_recovery
        ? PRIMARY
        : {
            role: 'replica',
            serves_limits: await this.standbyServesLimits(row),
            lag_bytes: row.lag_bytes === null ? null : Number(row.lag_bytes),
            lag_seconds: row.lag_seconds === null ? null : Number(row.lag_seconds),
            wal_receiver: row.receiver,
          };
      this.known = { state, at: this.now() };
      return state;
    } catch (error) {
      // Unknown until the database answers again: never answer from a stale guess.
      this.known = undefined;
      throw error;
    }
  }

  private async standbyServesLimits(row: ProbeRow): Promise<boolean> {
    if (!this.patroni) return this.replicaLimits === 'sync';
    // Over a unix socket the server has no address to match with Patroni's members: not known, so not served.
    if (row.server_address === null || row.server_port === null) return false;
    return (await this.patroni.isSynchronousStandby(row.server_address, row.server_port)) === true;
  }
}
