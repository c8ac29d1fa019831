import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PublicationListener, PublicationNotices, PUBLICATIONS_CHANNEL } from '../../src/events/publication-notices.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { startPgBouncer, type PgBouncer } from '../helpers/topology.js';
import { createLogger } from '../../src/logger.js';
import { logBuffer } from '../helpers/log-buffer.js';
import { eventually } from './load.js';

const binDir = postgresBinDir();

/**
 * How a `deliver` process hears of the API-only nodes' publications
 * (src/events/publication-notices.ts): NOTIFY from one process, LISTEN on
 * another's connection of its own, checked by a probe; behind PgBouncer in
 * transaction mode the probe is not heard and the worker relies on its poll;
 * a listening connection that is cut (a restart, a failover) is opened again.
 */
describe.runIf(binDir)('publication notices between API-only nodes and delivery workers', () => {
  let pg: TempPostgres;
  let bouncer: PgBouncer;
  const stores: PostgresStore[] = [];
  const listeners: PublicationListener[] = [];
  const open = (url: string) => {
    const store = new PostgresStore(url, { poolSize: 2, namedStatements: false });
    stores.push(store);
    return store;
  };
  const listen = (store: PostgresStore) => {
    const heard: string[] = [];
    let resumed = 0;
    const log = logBuffer();
    const listener = new PublicationListener(store, { onPublished: (orgId) => heard.push(orgId), onResumed: () => (resumed += 1), log: createLogger('info', log.stream), probeMs: 3000 });
    listeners.push(listener);
    listener.start();
    return { listener, heard, log, resumed: () => resumed };
  };

  beforeAll(async () => {
    pg = await createTempPostgres(binDir ?? '');
    bouncer = await startPgBouncer({ port: Number(new URL(pg.url).port) }, 'transaction');
  });
  afterAll(async () => {
    for (const listener of listeners) await listener.stop();
    for (const store of stores) await store.close();
    await bouncer?.destroy();
    await pg?.destroy();
  });

  it('a worker hears each organization an API node published for, and again after its connection is cut', async () => {
    const api = open(pg.url);
    const worker = listen(open(pg.url));
    await eventually(async () => worker.listener.hearing, 30_000, 'the listener hearing its probe');
    expect(worker.resumed()).toBe(1);
    const notices = new PublicationNotices(api);
    for (const orgId of ['11', '12', '11', '13']) notices.published(orgId);
    await notices.settled();
    await eventually(async () => ['11', '12', '13'].every((orgId) => worker.heard.includes(orgId)), 30_000, 'the notices heard');

    // The listening backend terminated, as a restart or failover would: the listener opens a connection again.
    const [cut] = await api.query<{ n: number }>(`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE query = $1`, [`LISTEN ${PUBLICATIONS_CHANNEL}`]);
    expect(cut?.n).toBe(1);
    await eventually(async () => worker.resumed() === 2 && worker.listener.hearing, 60_000, 'the listener hearing again');
    notices.published('14');
    await notices.settled();
    await eventually(async () => worker.heard.includes('14'), 30_000, 'a notice after the reconnect');
  });

  it('behind PgBouncer in transaction mode the probe is not heard: the worker says it relies on its poll', async () => {
    const worker = listen(open(bouncer.url()));
    await eventually(async () => worker.log.text().includes('delivering on the poll'), 30_000, 'the listener giving up on LISTEN');
    expect(worker.listener.hearing).toBe(false);
    expect(worker.resumed()).toBe(0);
  });
});
