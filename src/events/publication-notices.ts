import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import type { PostgresStore } from '../store/postgres-store.js';
import type { Queryable } from '../store/store.js';

/** The channel an API-only node (`serve --deliver off`) names each organization it published for on. */
export const PUBLICATIONS_CHANNEL = 'lending_api_published';

/**
 * Tells delivery workers (`lending-api deliver`) which organizations this
 * node published for, by NOTIFY (which passes PgBouncer in any mode): one
 * statement at a time, the organizations named meanwhile folded into the
 * next, so a burst of publications costs a few statements, not one each.
 * A failure is dropped: the workers' poll finds the work anyway.
 */
export class PublicationNotices {
  private readonly waiting = new Set<string>();
  private sending: Promise<void> | undefined;

  constructor(private readonly db: Queryable) {}

  published(orgId: string): void {
    this.waiting.add(orgId);
    this.sending ??= this.send().finally(() => (this.sending = undefined));
  }

  /** Resolves once nothing is being sent (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private async send(): Promise<void> {
    while (this.waiting.size > 0) {
      const orgIds = [...this.waiting];
      this.waiting.clear();
      await this.db.query('SELECT pg_notify($1, org_id) FROM unnest($2::text[]) AS org_id', [PUBLICATIONS_CHANNEL, orgIds]).catch(() => {});
    }
  }
}

export interface PublicationListenerOptions {
  /** Told of each organization an API-only node published for. */
  readonly onPublished: (orgId: string) => void;
  /** Told when the listener (re)starts hearing: notices may have been missed before. */
  readonly onResumed: () => void;
  readonly log: FastifyBaseLogger;
  /** How long the listener waits for its own probe notice before it relies on the poll alone. */
  readonly probeMs?: number;
}

const RECONNECT_FIRST_MS = 1000;
const RECONNECT_MAX_MS = 30_000;
/** After a probe not heard: how long before the listener tries again (a probe slow on a busy database, not PgBouncer). */
const UNHEARD_RETRY_MS = 60_000;

/**
 * A delivery worker's LISTEN on PUBLICATIONS_CHANNEL, on a connection of its
 * own beside the store's pool: a publication of an API-only node wakes the
 * worker's deliverer at once rather than at its next poll
 * (WEBHOOK_POLL_INTERVAL_MS). Whether notices arrive is checked, not assumed:
 * after each LISTEN the worker sends itself a probe through the pool, and
 * behind PgBouncer in transaction mode (where a LISTEN does not stay on the
 * session) the probe is not heard, so the worker says so, relies on the
 * poll, and tries again a minute later. A lost connection (a restart, a
 * failover) is opened again, backing off.
 */
export class PublicationListener {
  private client: pg.Client | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private probe: { token: string; heard: () => void } | undefined;
  /** What the log last said: each change of whether notices are heard is said once. */
  private said: 'hearing' | 'polling' | undefined;
  /** Whether notices are heard now (the probe came back on the current connection). */
  hearing = false;

  constructor(
    private readonly store: PostgresStore,
    private readonly options: PublicationListenerOptions,
  ) {}

  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ ...this.store.pool.options, statement_timeout: undefined });
    this.client = client;
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      const payload = message.payload ?? '';
      if (this.probe && payload === this.probe.token) this.probe.heard();
      else if (/^\d+$/.test(payload)) this.options.onPublished(payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${PUBLICATIONS_CHANNEL}`);
      if (this.closed || this.client !== client) return;
      const heard = await this.probed();
      if (this.closed || this.client !== client) return;
      this.failures = 0;
      this.hearing = heard;
      if (heard) {
        if (this.said !== 'hearing') this.options.log.info('delivery woken by the API nodes’ publications (LISTEN), polling as a fallback');
        this.said = 'hearing';
        this.options.onResumed();
      } else {
        if (this.said !== 'polling') {
          this.options.log.info('notices of publications are not heard on this connection (PgBouncer in transaction mode?): delivering on the poll (WEBHOOK_POLL_INTERVAL_MS)');
        }
        this.said = 'polling';
        this.client = undefined;
        await client.end().catch(() => {});
        this.retryTimer = setTimeout(() => void this.connect(), UNHEARD_RETRY_MS);
        this.retryTimer.unref();
      }
    } catch {
      this.lost(client);
    }
  }

  /** Sends a notice of its own through the store's pool and waits for it on the listening connection. */
  private probed(): Promise<boolean> {
    const token = `probe:${randomBytes(8).toString('hex')}`;
    return new Promise<boolean>((resolve) => {
      const done = (heard: boolean) => {
        clearTimeout(timer);
        this.probe = undefined;
        resolve(heard);
      };
      const timer = setTimeout(() => done(false), this.options.probeMs ?? 5000);
      this.probe = { token, heard: () => done(true) };
      this.store.query('SELECT pg_notify($1, $2)', [PUBLICATIONS_CHANNEL, token]).catch(() => done(false));
    });
  }

  private lost(client: pg.Client): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    this.hearing = false;
    void client.end().catch(() => {});
    this.failures += 1;
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_FIRST_MS * 2 ** (this.failures - 1));
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }
}
