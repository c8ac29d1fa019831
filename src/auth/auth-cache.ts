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
 */
export function createAuthCache(options: AuthCacheOptions): AuthCache {
  const { ttlMs, maxEntries = 10_000, now = Date.now } = options;
  const entries = new Map<string, Entry>();
  return {
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
  };
}

function cacheKey(authorization: string): string {
  // One-shot hash: a quarter of the CPU of createHash().update().digest() for a string this short.
  return hash('sha256', authorization, 'base64');
}
