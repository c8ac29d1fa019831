/**
 * Added latency per request when Redis hangs (SIGSTOP) or is down, with the
 * rate limits counted through Redis. Starts a redis-server of its own on a
 * free port (never the shared one) and the service in this process, then
 * times sequential requests in each phase:
 *
 *   node --import tsx bench/hung-redis.ts [requests per phase, default 300]
 */
import { performance } from 'node:perf_hooks';
import { createApiKey } from '../src/auth/api-keys.js';
import { createOrganization } from '../src/organizations/organizations.js';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { startThrowawayRedis } from '../test/helpers/redis.js';

const perPhase = Number(process.argv[2] ?? 300);
const redis = await startThrowawayRedis();
const server = await startServer(
  loadConfig({
    DATABASE_URL: 'pglite://memory',
    PORT: '0',
    LOG_LEVEL: 'warn',
    REDIS_URL: redis.url,
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_MINUTE: '1000',
    REDIS_BREAKER_COOLDOWN_MS: '1000',
  }),
);
const org = await createOrganization(server.store, 'Bench Lender', 'org_bench_redis');
const key = await createApiKey(server.store, org.uid);
const authorization = `Basic ${Buffer.from(`${org.uid}:${key.key}`).toString('base64')}`;

async function timed(): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/api/methods/`, { headers: { authorization } });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`unexpected ${response.status}`);
  return performance.now() - started;
}

async function phase(name: string): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < perPhase; i += 1) latencies.push(await timed());
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  console.log(`${name.padEnd(34)} p50 ${at(0.5).toFixed(2)} ms  p99 ${at(0.99).toFixed(2)} ms  max ${at(1).toFixed(2)} ms`);
  return latencies;
}

const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)] ?? NaN;
try {
  for (let i = 0; i < 50; i += 1) await timed();
  const healthy = await phase('Redis healthy');
  redis.freeze();
  console.log(`first request after SIGSTOP         ${(await timed()).toFixed(2)} ms (waits the Redis budget, opens the breaker)`);
  const hung = await phase('Redis frozen, breaker open');
  redis.thaw();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const recovered = await phase('Redis thawed, breaker closed');
  await redis.stop();
  console.log(`first request after Redis stopped   ${(await timed()).toFixed(2)} ms`);
  const down = await phase('Redis stopped');
  for (const [name, sorted] of [['frozen', hung], ['thawed', recovered], ['stopped', down]] as const) {
    console.log(`added median latency, ${name}: ${(median(sorted) - median(healthy)).toFixed(2)} ms`);
  }
} finally {
  await server.close();
  await redis.stop();
}
