import { hash } from 'node:crypto';
import type { AuthContext } from './authenticate.js';

export interface AuthCacheOptions {
  /**
   * How long a successful verification is reused: the revocation bound. A
   * revoked key keeps working for at most this long on a process that has
   * just seen it. 0 turns the cache off.
   */
  readonly ttlMs: number;
  readonly maxEntries?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  readonly now?: () => number;
}

/** Keyed by the `Authorization` header exactly as the client sent it (`Basic …`). */
export interface AuthCache {
  get(authorization: string): AuthContext | undefined;
  remember(authorization: string, auth: AuthContext): void;
  /**
   * Drops what is known of `authorization` (a portal session that was just
   * ended): its entry, and the result of a verification still running, which
   * may have read the row before it ended.
   */
  forget(authorization: string): void;
  /**
   * The verification of `authorization`: `verify()` runs once for all the
   * requests that present the same header while it runs (single-flight), and
   * a success is remembered. A failure is shared by those requests only,
   * never kept.
   */
  verify(authorization: string, verify: () => Promise<AuthContext | undefined>): Promise<AuthContext | undefined>;
}

interface Entry {
  readonly auth: AuthContext;
  readonly until: number;
}

/**
 * Successful Basic-auth verifications, kept for a few seconds so a busy
 * client costs one key lookup per TTL instead of one per request. Entries
 * are keyed by the SHA-256 of the whole `Authorization` header as sent
 * (organization ID and key, base64-encoded), so only the exact credentials
 * that succeeded can hit one: a wrong secret for a known key id hashes
 * elsewhere and goes to the database. A hit needs no parsing or decoding of
 * the header. Failures are never cached. The key itself is never held.
 *
 * Concurrent requests with the same header share one verification: when
 * the entry of a busy key expires (or on its first requests), hundreds of
 * requests queued behind it would otherwise each send the key lookup to the
 * database at once.
 */
export function createAuthCache(options: AuthCacheOptions): AuthCache {
  const { ttlMs, maxEntries = 10_000, now = Date.now } = options;
  const entries = new Map<string, Entry>();
  const inFlight = new Map<string, Promise<AuthContext | undefined>>();
  const cache: AuthCache = {
    get(authorization) {
      if (ttlMs <= 0) return undefined;
      const key = cacheKey(authorization);
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (now() >= entry.until) {
        entries.delete(key);
        return undefined;
      }
      return entry.auth;
    },
    remember(authorization, auth) {
      if (ttlMs <= 0) return;
      // A key that expires sooner than the TTL is not trusted past its expiry.
      const until = Math.min(now() + ttlMs, auth.keyExpiresAtMs ?? Number.POSITIVE_INFINITY);
      const key = cacheKey(authorization);
      entries.delete(key);
      if (entries.size >= maxEntries) {
        const oldest = entries.keys().next();
        if (!oldest.done) entries.delete(oldest.value);
      }
      entries.set(key, { auth, until });
    },
    forget(authorization) {
      const key = cacheKey(authorization);
      entries.delete(key);
      inFlight.delete(key);
    },
    verify(authorization, verify) {
      const key = cacheKey(authorization);
      const pending = inFlight.get(key);
      if (pending) return pending;
      const started: Promise<AuthContext | undefined> = verify().then(
        (auth) => {
          // Forgotten while it ran: answer the requests that waited, remember nothing.
          if (inFlight.get(key) !== started) return auth;
          inFlight.delete(key);
          if (auth) cache.remember(authorization, auth);
          return auth;
        },
        (error: unknown) => {
          if (inFlight.get(key) === started) inFlight.delete(key);
          throw error;
        },
      );
      inFlight.set(key, started);
      return started;
    },
  };
  return cache;
}

function cacheKey(authorization: string): string {
  // One-shot hash: a quarter of the CPU of createHash().update().digest() for a string this short.
  return hash('sha256', authorization, 'base64');
}
