import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { startMetricsServer } from '../../src/metrics/metrics-server.js';
import { describeEachStore, openPgliteTestStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

describeEachStore('Prometheus metrics', (store, kind) => {
  it('counts requests and records latency by route pattern and status', async () => {
    const registry = new Registry();
    const app = await buildApp({ store: store(), metrics: registry });
    const tenant = await createTenant(store());
    await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    await app.inject({ url: '/api/methods/pm_nope/', headers: { authorization: tenant.authorization } });
    await app.inject({ url: '/no/such/path/with/a/random/tail-123' });
    await app.close();

    const text = await registry.metrics();
    expect(text).toContain('lending_api_http_requests_total{method="GET",route="/api/methods/",status="200"} 2');
    expect(text).toContain('lending_api_http_requests_total{method="GET",route="/api/methods/:uid/",status="404"} 1');
    expect(text).toContain('lending_api_http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(text).toContain('lending_api_http_request_duration_seconds_count{method="GET",route="/api/methods/",status="200"} 2');
    expect(text).toMatch(/lending_api_http_request_duration_seconds_bucket\{le="0.1",method="GET",route="\/api\/methods\/",status="200"\} \d/);
    expect(text).not.toContain('random/tail');
  });

  if (kind === 'postgres') it('reports database pool usage', async () => {
    const registry = new Registry();
    const app = await buildApp({ store: store(), metrics: registry });
    await app.inject({ url: '/readyz' });
    const text = await registry.metrics();
    await app.close();
    expect(text).toMatch(/lending_api_db_pool_connections\{state="total"\} [1-9]/);
    expect(text).toMatch(/lending_api_db_pool_connections\{state="idle"\} \d/);
    expect(text).toMatch(/lending_api_db_pool_connections\{state="waiting"\} 0/);
  });
});

describe('metrics listener', () => {
  it('serves GET /metrics in the Prometheus text format on its own port, and nothing else', async () => {
    const registry = new Registry();
    const store = await openPgliteTestStore();
    const app = await buildApp({ store, metrics: registry });
    await app.inject({ url: '/healthz' });
    const server = await startMetricsServer(registry, 0, '127.0.0.1');
    try {
      const response = await fetch(server.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      expect(await response.text()).toContain('# TYPE lending_api_http_requests_total counter');
      expect((await fetch(server.url.replace('/metrics', '/api/methods/'))).status).toBe(404);
    } finally {
      await server.close();
      await app.close();
      await store.close();
    }
  });
});
