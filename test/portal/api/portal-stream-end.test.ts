import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EVENT_STREAM_PATH } from '../../../src/http/event-stream-routes.js';
import { buildApp } from '../../helpers/app.js';
import { SseReader, STREAM_TEST_HTTP } from '../../helpers/sse.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant } from '../../helpers/tenants.js';
import { openSession } from './portal-helpers.js';

const SETTINGS = { heartbeatMs: 600_000, pollIntervalMs: 50, stallTimeoutMs: 600_000, bufferBytes: 16 * 1024 };

describeEachStore('an event stream opened with a portal session', (store) => {
  let app: FastifyInstance;
  let base: string;
  beforeAll(async () => {
    app = await buildApp({ store: store(), eventStream: SETTINGS, http: STREAM_TEST_HTTP });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app.close();
  });

  it('ends when the session ends, while a key’s stream runs on; reconnecting is refused', async () => {
    const tenant = await createTenant(store(), 'Stream session end');
    const { bearer } = await openSession(app, tenant.authorization);
    await store().query(`UPDATE portal_sessions SET session_expires_at = now() + interval '1 second' WHERE org_id = $1 AND session_hash IS NOT NULL`, [tenant.org.id]);
    const url = `${base}${EVENT_STREAM_PATH}`;
    const byKey = await SseReader.open(url, { authorization: tenant.authorization });
    const bySession = await SseReader.open(url, { authorization: bearer });
    try {
      expect(bySession.response.status).toBe(200);
      expect(byKey.response.status).toBe(200);
      // The stream ends as a finished answer (no event came): the reader's next() sees its end.
      expect(await bySession.next()).toBeUndefined();
      expect(bySession.ended).toBe(true);
      expect(app.eventStreams?.slots.total).toBe(1);
      expect(byKey.ended).toBe(false);
      const again = await fetch(url, { headers: { authorization: bearer, accept: 'text/event-stream' } });
      expect(again.status).toBe(401);
      expect(((await again.json()) as { detail: string }).detail).toContain('portal session has ended');
    } finally {
      byKey.close();
      bySession.close();
    }
  });
});
