import { MAX_PUBLIC_URL_LENGTH } from './domain/answer-bounds.js';
import { parseCorsOrigins, type CorsOrigins } from './domain/cors-origins-setting.js';
import { parseFrameAncestors, type FrameAncestors } from './domain/frame-ancestors-setting.js';
import { DEFAULT_LIST_CACHE } from './listing/list-cache.js';
import { DEFAULT_DATABASE_URL, parseDatabaseUrl, type StoreLocation } from './store/open-store.js';
import { parseTrustProxy, type TrustProxy } from './domain/trust-proxy-setting.js';
import { defaultAllowedHosts, parseAllowedHosts, type AllowedHosts } from './domain/allowed-hosts-setting.js';
import { REPLICA_LIMITS_MODES, type ReplicaLimits } from './store/node-role.js';
import type { DestinationPolicy } from './webhooks/destination.js';
import { parseWebhookSecretKey, type WebhookSecretKey } from './webhooks/webhook-key.js';

export interface Config {
  readonly databaseUrl: string;
  readonly store: StoreLocation;
  readonly port: number;
  readonly host: string;
  /** Base for absolute links, without a trailing slash; else taken from each request. */
  readonly publicUrl: string | undefined;
  /** The Host names served (ALLOWED_HOSTS); default: HOST, the loopback names and PUBLIC_URL's host. */
  readonly allowedHosts: AllowedHosts;
  /** Which X-Forwarded-Proto/-Host/-For hops to believe: none, the nearest n, or those from these proxy addresses. */
  readonly trustProxy: TrustProxy;
  /** The origins whose browser pages may read answers (CORS_ALLOWED_ORIGINS); none by default. */
  readonly corsOrigins: CorsOrigins;
  /** The origins whose pages may frame the portal (PORTAL_FRAME_ANCESTORS); none by default. */
  readonly portalFrameAncestors: FrameAncestors;
  /** Requests per minute per API key; 0 turns rate limiting off. */
  readonly rateLimitPerMinute: number;
  /** Writes (drawdowns, repayments) per minute per API key, a budget of their own; 0 turns it off. */
  readonly writeRateLimitPerMinute: number;
  /** How long a write's response is replayed for its Idempotency-Key. */
  readonly idempotencyKeyTtlHours: number;
  /** How often `serve` deletes expired idempotency keys; 0: never (run `idempotency prune` instead). */
  readonly idempotencyPruneIntervalMs: number;
  readonly redisUrl: string | undefined;
  /** How long a request waits for Redis before its limits are counted in memory (and the breaker opens). */
  readonly redisTimeoutMs: number;
  /** After a Redis failure, how long limits are counted in memory before Redis is tried again. */
  readonly redisBreakerCooldownMs: number;
  readonly logLevel: string;
  readonly databasePoolSize: number;
  /** How long a process waits for another to release an embedded store. */
  readonly pgliteLockTimeoutMs: number;
  /** Embedded store's shared_buffers (e.g. `16MB`); undefined: PGlite's default (128MB). */
  readonly pgliteSharedBuffers: string | undefined;
  /** Failed authentications per minute per client address before 429; 0 turns it off. */
  readonly authFailuresPerMinute: number;
  /** Requests per minute per client address to the routes that take no API key (probes, reference); 0: no limit. */
  readonly unauthenticatedRateLimitPerMinute: number;
  /** Port for the Prometheus `/metrics` listener; undefined = no metrics listener. */
  readonly metricsPort: number | undefined;
  readonly metricsHost: string;
  /** HTTP worker processes (node:cluster); 1 = serve in this process. */
  readonly workers: number;
  /** How long shutdown waits for in-flight requests before closing them. */
  readonly shutdownTimeoutMs: number;
  /** PostgreSQL: how long to wait for a connection before answering 503. */
  readonly databaseConnectTimeoutMs: number;
  /** PostgreSQL: how long one query may run before it is cancelled (503). */
  readonly databaseQueryTimeoutMs: number;
  /** PostgreSQL: how long a request may wait for a free pooled connection under load (then 503). */
  readonly databasePoolWaitMs: number;
  /** How long a successful API-key check is reused: a revoked key stops working within this bound. */
  readonly authCacheTtlMs: number;
  /** How many lists' counts and page anchors to remember per process (0: none). */
  readonly listCacheEntries: number;
  /** Slow clients: how long the request line and headers, the whole request, and an idle keep-alive connection may take; open connections per process. */
  readonly http: HttpLimits;
  /** PostgreSQL: how long one request may spend on the database in total before it gets 503 (0: no budget). */
  readonly databaseRequestBudgetMs: number;
  /** The longest a write may wait in the process's write queue before its transaction starts (refused as overloaded beyond). */
  readonly writeQueueWaitMs: number;
  /** Database queries one organization may have waiting for a connection on a node; one more is answered 503 overloaded. */
  readonly databaseQueuePerOrg: number;
  /** Write transactions in flight at once per process; 0: the pool size less two (connections left for reads). */
  readonly writeConcurrency: number;
  /** On a hot standby: `sync` answers credit limits (a synchronous remote_apply standby), `refuse` does not. */
  readonly replicaLimits: ReplicaLimits;
  /** Patroni REST API URLs (PATRONI_URL, comma-separated): Patroni then says whether this node's standby is the synchronous one. */
  readonly patroniUrls: readonly string[];
  /** PostgreSQL: prepare hot statements by name per connection; off behind PgBouncer in transaction mode. */
  readonly databasePreparedStatements: boolean;
  /** WEBHOOK_SECRET_KEY: seals endpoint signing secrets; unset: the embedded store's generated key, or none on PostgreSQL. */
  readonly webhookSecretKey: WebhookSecretKey | undefined;
  /** Where webhooks may be delivered (WEBHOOK_ALLOW_PRIVATE, WEBHOOK_ALLOWED_HOSTS). */
  readonly webhookDestinations: DestinationPolicy;
  /** How long events are kept before they are pruned. */
  readonly eventRetentionDays: number;
  /** WEBHOOK_CLAIM_MS: how long a node's claim on a delivery attempt holds; another node takes it after (a node that died). */
  readonly webhookClaimMs: number;
  /** WEBHOOK_DELIVERY (`serve --deliver`): whether this node delivers webhooks; off for a node that only serves the API. */
  readonly webhookDelivery: boolean;
  /** WEBHOOK_POLL_INTERVAL_MS: how often a delivering node asks the database for due deliveries it was not told of. */
  readonly webhookPollIntervalMs: number;
}

/** SPEC §3a: the same Idempotency-Key replays its first response for 24 hours. */
export const DEFAULT_IDEMPOTENCY_KEY_TTL_HOURS = 24;

export interface HttpLimits {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** 0 = no cap. */
  readonly maxConnections: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

type Env = Record<string, string | undefined>;

/**
 * Reads and validates every setting once. A bad value throws a ConfigError
 * naming the variable; `overrides` (command-line flags) win over `env`.
 */
export function loadConfig(env: Env = process.env, overrides: Env = {}): Config {
  const read = (name: string) => {
    const value = overrides[name] ?? env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const databaseUrl = read('DATABASE_URL') ?? DEFAULT_DATABASE_URL;
  const store = parseDatabaseUrl(databaseUrl);
  if ('error' in store) throw new ConfigError('DATABASE_URL', store.error);
  const host = read('HOST') ?? '127.0.0.1';
  const configuredPublicUrl = publicUrl(read('PUBLIC_URL'));
  return {
    databaseUrl,
    store,
    port: integer('PORT', read('PORT'), 3000, 0, 65535),
    host,
    publicUrl: configuredPublicUrl,
    allowedHosts: allowedHosts(read('ALLOWED_HOSTS'), host, configuredPublicUrl),
    trustProxy: trustProxy(read('TRUST_PROXY')),
    corsOrigins: corsOrigins(read('CORS_ALLOWED_ORIGINS')),
    portalFrameAncestors: frameAncestors(read('PORTAL_FRAME_ANCESTORS')),
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', read('RATE_LIMIT_PER_MINUTE'), 60, 0, 1_000_000),
    writeRateLimitPerMinute: integer('WRITE_RATE_LIMIT_PER_MINUTE', read('WRITE_RATE_LIMIT_PER_MINUTE'), 60, 0, 1_000_000),
    idempotencyKeyTtlHours: integer('IDEMPOTENCY_KEY_TTL_HOURS', read('IDEMPOTENCY_KEY_TTL_HOURS'), DEFAULT_IDEMPOTENCY_KEY_TTL_HOURS, 1, 24 * 365),
    idempotencyPruneIntervalMs: integer('IDEMPOTENCY_PRUNE_INTERVAL_MS', read('IDEMPOTENCY_PRUNE_INTERVAL_MS'), 3_600_000, 0, 86_400_000),
    redisUrl: redisUrl(read('REDIS_URL')),
    redisTimeoutMs: integer('REDIS_TIMEOUT_MS', read('REDIS_TIMEOUT_MS'), 200, 1, 10_000),
    redisBreakerCooldownMs: integer('REDIS_BREAKER_COOLDOWN_MS', read('REDIS_BREAKER_COOLDOWN_MS'), 5000, 100, 600_000),
    logLevel: oneOf('LOG_LEVEL', read('LOG_LEVEL'), 'info', LOG_LEVELS),
    databasePoolSize: integer('DATABASE_POOL_SIZE', read('DATABASE_POOL_SIZE'), 10, 1, 1000),
    pgliteLockTimeoutMs: integer('PGLITE_LOCK_TIMEOUT_MS', read('PGLITE_LOCK_TIMEOUT_MS'), 5000, 0, 600_000),
    pgliteSharedBuffers: memorySize('PGLITE_SHARED_BUFFERS', read('PGLITE_SHARED_BUFFERS')),
    authFailuresPerMinute: integer('AUTH_FAILURES_PER_MINUTE', read('AUTH_FAILURES_PER_MINUTE'), 20, 0, 1_000_000),
    unauthenticatedRateLimitPerMinute: integer('UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE', read('UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE'), 600, 0, 1_000_000),
    metricsPort: optionalInteger('METRICS_PORT', read('METRICS_PORT'), 0, 65535),
    metricsHost: read('METRICS_HOST') ?? '127.0.0.1',
    workers: integer('WORKERS', read('WORKERS'), 1, 1, 256),
    shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', read('SHUTDOWN_TIMEOUT_MS'), 10_000, 0, 600_000),
    databaseConnectTimeoutMs: integer('DATABASE_CONNECT_TIMEOUT_MS', read('DATABASE_CONNECT_TIMEOUT_MS'), 800, 1, 60_000),
    databaseQueryTimeoutMs: integer('DATABASE_QUERY_TIMEOUT_MS', read('DATABASE_QUERY_TIMEOUT_MS'), 15_000, 1, 3_600_000),
    databasePoolWaitMs: integer('DATABASE_POOL_WAIT_MS', read('DATABASE_POOL_WAIT_MS'), 5000, 1, 600_000),
    authCacheTtlMs: integer('AUTH_CACHE_TTL_MS', read('AUTH_CACHE_TTL_MS'), 5000, 0, 60_000),
    listCacheEntries: integer('LIST_CACHE_ENTRIES', read('LIST_CACHE_ENTRIES'), DEFAULT_LIST_CACHE.entries, 0, 1_000_000),
    http: httpLimits(read),
    databaseRequestBudgetMs: integer('DATABASE_REQUEST_BUDGET_MS', read('DATABASE_REQUEST_BUDGET_MS'), 2000, 0, 600_000),
    writeQueueWaitMs: integer('WRITE_QUEUE_WAIT_MS', read('WRITE_QUEUE_WAIT_MS'), 5000, 1, 600_000),
    databaseQueuePerOrg: integer('DATABASE_QUEUE_PER_ORG', read('DATABASE_QUEUE_PER_ORG'), 1000, 1, 100_000),
    writeConcurrency: integer('WRITE_CONCURRENCY', read('WRITE_CONCURRENCY'), 0, 0, 1000),
    databasePreparedStatements: boolean('DATABASE_PREPARED_STATEMENTS', read('DATABASE_PREPARED_STATEMENTS'), true),
    replicaLimits: oneOf('REPLICA_LIMITS', read('REPLICA_LIMITS'), 'refuse', [...REPLICA_LIMITS_MODES]) as ReplicaLimits,
    patroniUrls: patroniUrls(read('PATRONI_URL')),
    webhookSecretKey: webhookSecretKey(read('WEBHOOK_SECRET_KEY')),
    webhookDestinations: {
      allowPrivate: boolean('WEBHOOK_ALLOW_PRIVATE', read('WEBHOOK_ALLOW_PRIVATE'), false),
      allowHosts: webhookAllowedHosts(read('WEBHOOK_ALLOWED_HOSTS')),
    },
    eventRetentionDays: integer('EVENT_RETENTION_DAYS', read('EVENT_RETENTION_DAYS'), 30, 1, 3650),
    // The attempt's deadline is 10 s: the claim outlasts it, with room to record the outcome.
    webhookClaimMs: integer('WEBHOOK_CLAIM_MS', read('WEBHOOK_CLAIM_MS'), 30_000, 11_000, 3_600_000),
    webhookDelivery: boolean('WEBHOOK_DELIVERY', read('WEBHOOK_DELIVERY'), true),
    webhookPollIntervalMs: integer('WEBHOOK_POLL_INTERVAL_MS', read('WEBHOOK_POLL_INTERVAL_MS'), 500, 10, 60_000),
  };
}

function webhookSecretKey(raw: string | undefined): WebhookSecretKey | undefined {
  if (raw === undefined) return undefined;
  const parsed = parseWebhookSecretKey(raw);
  if ('error' in parsed) throw new ConfigError('WEBHOOK_SECRET_KEY', parsed.error);
  return parsed;
}

// A host name (labels of letters, digits, `-` and `_`), an IPv4 literal, or an IPv6 literal with or without brackets.
const WEBHOOK_HOST = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$|^\[?[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\]?$/;

function webhookAllowedHosts(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  return raw.split(',').map((entry) => {
    const host = entry.trim();
    if (host === '' || host.length > 253 || !WEBHOOK_HOST.test(host)) {
      throw new ConfigError('WEBHOOK_ALLOWED_HOSTS', `must be comma-separated host names or IP addresses (no scheme, port or path), got '${host.slice(0, 100)}'`);
    }
    return host.toLowerCase();
  });
}

function patroniUrls(value: string | undefined): string[] {
  if (value === undefined || value.trim() === '') return [];
  return value.split(',').map((url) => {
    const trimmed = url.trim();
    let parsed: URL;
    try {
      parsed = new URL(trimmed);
    } catch {
      throw new ConfigError('PATRONI_URL', `must be comma-separated http(s) URLs of Patroni's REST API, got '${trimmed}'`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError('PATRONI_URL', `must be http(s) URLs, got '${trimmed}'`);
    }
    return trimmed;
  });
}

function httpLimits(read: (name: string) => string | undefined): HttpLimits {
  const headersTimeoutMs = integer('HTTP_HEADERS_TIMEOUT_MS', read('HTTP_HEADERS_TIMEOUT_MS'), 10_000, 100, 600_000);
  const requestTimeoutMs = integer('HTTP_REQUEST_TIMEOUT_MS', read('HTTP_REQUEST_TIMEOUT_MS'), 30_000, 100, 3_600_000);
  if (requestTimeoutMs < headersTimeoutMs) {
    throw new ConfigError('HTTP_REQUEST_TIMEOUT_MS', `must be at least HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs}), got '${requestTimeoutMs}'`);
  }
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', read('HTTP_KEEP_ALIVE_TIMEOUT_MS'), 72_000, 1, 3_600_000),
    maxConnections: integer('HTTP_MAX_CONNECTIONS', read('HTTP_MAX_CONNECTIONS'), 10_000, 0, 1_000_000),
  };
}

function integer(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got '${raw}'`);
  }
  return Number(raw);
}

/** A PostgreSQL memory setting: whole number with kB, MB or GB, from 1MB to 4GB. */
function memorySize(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const match = /^(\d+)(kB|MB|GB)$/.exec(raw);
  const kilobytes = match ? Number(match[1]) * { kB: 1, MB: 1024, GB: 1024 * 1024 }[match[2] as 'kB' | 'MB' | 'GB'] : 0;
  if (kilobytes < 1024 || kilobytes > 4 * 1024 * 1024) throw new ConfigError(name, `must be a size from 1MB to 4GB such as 16MB, got '${raw}'`);
  return raw;
}

function optionalInteger(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  return raw === undefined ? undefined : integer(name, raw, min, min, max);
}

function trustProxy(raw: string | undefined): TrustProxy {
  if (raw === undefined) return false;
  const parsed = parseTrustProxy(raw);
  if ('error' in parsed) throw new ConfigError('TRUST_PROXY', parsed.error);
  return parsed.trust;
}

function boolean(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined) return fallback;
  const value = raw.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(name, `must be true or false, got '${raw}'`);
}

function oneOf(name: string, raw: string | undefined, fallback: string, allowed: string[]): string {
  if (raw === undefined) return fallback;
  if (!allowed.includes(raw)) throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got '${raw}'`);
  return raw;
}

function publicUrl(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('PUBLIC_URL', `must be an absolute http(s) URL, got '${raw}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('PUBLIC_URL', `must be an http(s) URL, got '${raw}'`);
  if (url.search || url.hash) throw new ConfigError('PUBLIC_URL', 'must not have a query or fragment');
  const normalized = url.toString().replace(/\/+$/, '');
  // Every page link starts with it: its length is part of theirs (src/listing/page-links.ts).
  if (normalized.length > MAX_PUBLIC_URL_LENGTH) throw new ConfigError('PUBLIC_URL', `must be at most ${MAX_PUBLIC_URL_LENGTH} characters (as a URL, percent-encoded), got ${normalized.length}`);
  return normalized;
}

function allowedHosts(raw: string | undefined, host: string, configuredPublicUrl: string | undefined): AllowedHosts {
  if (raw === undefined) return defaultAllowedHosts(host, configuredPublicUrl);
  const parsed = parseAllowedHosts(raw);
  if ('error' in parsed) throw new ConfigError('ALLOWED_HOSTS', parsed.error);
  return parsed.hosts;
}

function corsOrigins(raw: string | undefined): CorsOrigins {
  const parsed = parseCorsOrigins(raw);
  if ('error' in parsed) throw new ConfigError('CORS_ALLOWED_ORIGINS', parsed.error);
  return parsed;
}

function frameAncestors(raw: string | undefined): FrameAncestors {
  const parsed = parseFrameAncestors(raw);
  if ('error' in parsed) throw new ConfigError('PORTAL_FRAME_ANCESTORS', parsed.error);
  return parsed;
}

function redisUrl(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (!/^rediss?:\/\/[^\s]+$/.test(raw)) throw new ConfigError('REDIS_URL', `must be a redis:// or rediss:// URL`);
  return raw;
}
