import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '../bin/lending-api');

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      trustProxy: false,
      rateLimitPerMinute: 60,
      authFailuresPerMinute: 20,
      redisUrl: undefined,
      redisTimeoutMs: 200,
      redisBreakerCooldownMs: 5000,
      logLevel: 'info',
      metricsPort: undefined,
      metricsHost: '127.0.0.1',
      workers: 1,
      shutdownTimeoutMs: 10_000,
      databaseConnectTimeoutMs: 800,
      databaseQueryTimeoutMs: 15_000,
      databasePoolWaitMs: 5000,
      authCacheTtlMs: 5000,
      listCacheEntries: 10_000,
      databaseRequestBudgetMs: 2000,
      http: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 72_000, maxConnections: 10_000 },
      replicaLimits: 'refuse',
      databasePreparedStatements: true,
      writeRateLimitPerMinute: 60,
      idempotencyKeyTtlHours: 24,
      idempotencyPruneIntervalMs: 3_600_000,
    });
    expect(loadConfig({}).pgliteSharedBuffers).toBeUndefined();
    expect(loadConfig({ PGLITE_SHARED_BUFFERS: '16MB' }).pgliteSharedBuffers).toBe('16MB');
    expect(loadConfig({ LIST_CACHE_ENTRIES: '0' }).listCacheEntries).toBe(0);
    expect(loadConfig({ WRITE_RATE_LIMIT_PER_MINUTE: '0', IDEMPOTENCY_KEY_TTL_HOURS: '48', IDEMPOTENCY_PRUNE_INTERVAL_MS: '0' })).toMatchObject({
      writeRateLimitPerMinute: 0,
      idempotencyKeyTtlHours: 48,
      idempotencyPruneIntervalMs: 0,
    });
    expect(loadConfig({ REPLICA_LIMITS: 'sync', DATABASE_PREPARED_STATEMENTS: 'false' })).toMatchObject({
      replicaLimits: 'sync',
      databasePreparedStatements: false,
    });
    expect(loadConfig({}).patroniUrls).toEqual([]);
    expect(loadConfig({ PATRONI_URL: 'http://10.0.0.11:8008, http://10.0.0.12:8008' }).patroniUrls).toEqual([
      'http://10.0.0.11:8008',
      'http://10.0.0.12:8008',
    ]);
    expect(loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '500', HTTP_REQUEST_TIMEOUT_MS: '800', HTTP_MAX_CONNECTIONS: '0', DATABASE_REQUEST_BUDGET_MS: '0' })).toMatchObject({
      http: { headersTimeoutMs: 500, requestTimeoutMs: 800, maxConnections: 0 },
      databaseRequestBudgetMs: 0,
    });
  });

  it.each([
    ['PORT', '70000'],
    ['RATE_LIMIT_PER_MINUTE', 'lots'],
    ['WRITE_RATE_LIMIT_PER_MINUTE', 'many'],
    ['PGLITE_SHARED_BUFFERS', '16'],
    ['PGLITE_SHARED_BUFFERS', '512kB'],
    ['PGLITE_SHARED_BUFFERS', '5GB'],
    ['IDEMPOTENCY_KEY_TTL_HOURS', '0'],
    ['IDEMPOTENCY_PRUNE_INTERVAL_MS', '-5'],
    ['AUTH_FAILURES_PER_MINUTE', '-1'],
    ['REDIS_URL', 'localhost:6379'],
    ['LOG_LEVEL', 'loud'],
    ['TRUST_PROXY', 'maybe'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['REDIS_TIMEOUT_MS', '0'],
    ['REDIS_BREAKER_COOLDOWN_MS', 'soon'],
    ['METRICS_PORT', 'nine'],
    ['WORKERS', '0'],
    ['SHUTDOWN_TIMEOUT_MS', '1.5'],
    ['DATABASE_CONNECT_TIMEOUT_MS', '0'],
    ['DATABASE_QUERY_TIMEOUT_MS', 'forever'],
    ['DATABASE_POOL_WAIT_MS', ''.padEnd(3, 'x')],
    ['LIST_CACHE_ENTRIES', '-5'],
    ['REPLICA_LIMITS', 'always'],
    ['PATRONI_URL', '10.0.0.11:8008'],
    ['PATRONI_URL', 'ftp://10.0.0.11:8008'],
    ['DATABASE_PREPARED_STATEMENTS', 'sometimes'],
    ['DATABASE_URL', 'mysql://x'],
    ['PUBLIC_URL', 'not a url'],
    ['HTTP_HEADERS_TIMEOUT_MS', '0'],
    ['HTTP_REQUEST_TIMEOUT_MS', '5000'],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', 'long'],
    ['HTTP_MAX_CONNECTIONS', '-1'],
    ['DATABASE_REQUEST_BUDGET_MS', '2s'],
  ])('rejects %s=%s with a message naming the variable', (variable, value) => {
    let thrown: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).variable).toBe(variable);
    expect((thrown as Error).message).toMatch(new RegExp(`^${variable} `));
  });
});

describe('lending-api serve with a bad setting', () => {
  it('exits non-zero before listening, naming the variable on stderr', async () => {
    const failure = await run(BIN, ['serve', '--port', '0'], {
      env: { ...process.env, DATABASE_URL: 'pglite://memory', RATE_LIMIT_PER_MINUTE: 'sixty' },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string; stdout: string }) => error,
    );
    expect(failure?.code).not.toBe(0);
    expect(failure?.stderr).toContain("RATE_LIMIT_PER_MINUTE must be a whole number from 0 to 1000000, got 'sixty'");
    expect(failure?.stdout).not.toContain('listening');
  });

  it('refuses a PORTAL_FRAME_ANCESTORS entry that is not an origin', async () => {
    const failure = await run(BIN, ['serve', '--port', '0'], {
      env: { ...process.env, DATABASE_URL: 'pglite://memory', PORTAL_FRAME_ANCESTORS: "https://dashboard.example.com 'self'" },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string; stdout: string }) => error,
    );
    expect(failure?.code).not.toBe(0);
    expect(failure?.stderr).toContain("PORTAL_FRAME_ANCESTORS must be origins separated by spaces or commas");
    expect(failure?.stderr).toContain("got ''self''");
    expect(failure?.stdout).not.toContain('listening');
  });

  it('names the flag-backed variable too (--workers)', async () => {
    const failure = await run(BIN, ['serve', '--workers', 'two'], { env: { ...process.env, DATABASE_URL: 'pglite://memory' } }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).not.toBe(0);
    expect(failure?.stderr).toContain('WORKERS must be a whole number');
  });
});

describe('loadConfig overrides', () => {
  it('reads every core variable, and flags win over the environment', () => {
    const config = loadConfig(
      { DATABASE_URL: 'postgres://u:p@db:5432/lending', PORT: '8080', HOST: '0.0.0.0', PUBLIC_URL: 'https://api.example.com/', TRUST_PROXY: 'true', RATE_LIMIT_PER_MINUTE: '0', REDIS_URL: 'redis://cache:6379', LOG_LEVEL: 'warn' },
      { PORT: '9090' },
    );
    expect(config).toMatchObject({ store: { kind: 'postgres' }, port: 9090, host: '0.0.0.0', publicUrl: 'https://api.example.com', trustProxy: 1, rateLimitPerMinute: 0, redisUrl: 'redis://cache:6379', logLevel: 'warn' });
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8,fd00::/8' }).trustProxy).toEqual(['10.0.0.0/8', 'fd00::/8']);
    expect(loadConfig({}).store).toEqual({ kind: 'pglite', dataDir: path.resolve('data') });
    expect(loadConfig({ DATABASE_URL: 'pglite://memory' }).store).toEqual({ kind: 'pglite', dataDir: undefined });
  });
});

describe('PORTAL_FRAME_ANCESTORS', () => {
  it('is none by default, and takes origins separated by spaces or commas, each once', () => {
    expect(loadConfig({}).portalFrameAncestors).toEqual([]);
    expect(loadConfig({ PORTAL_FRAME_ANCESTORS: 'https://dashboard.example.com, https://admin.example.com:8443  http://localhost:5173 https://dashboard.example.com' }).portalFrameAncestors).toEqual([
      'https://dashboard.example.com',
      'https://admin.example.com:8443',
      'http://localhost:5173',
    ]);
  });

  it('refuses what is not an http(s) origin as a browser writes it, naming the entry', () => {
    for (const bad of ['*', "'self'", 'https://*.example.com', 'https://dashboard.example.com/', 'https://dashboard.example.com/app', 'HTTPS://Dashboard.example.com', 'https://dashboard.example.com:443', 'javascript:alert(1)', 'dashboard.example.com', "https://a.example.com;script-src"]) {
      expect(() => loadConfig({ PORTAL_FRAME_ANCESTORS: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ PORTAL_FRAME_ANCESTORS: `https://ok.example.com ${bad}` }), bad).toThrow(/^PORTAL_FRAME_ANCESTORS must be origins/);
    }
  });
});
