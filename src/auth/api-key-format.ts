import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * An API key is `lak_<key id hex>_<secret>`: the 64-bit id is public and
 * finds the stored row; the 256-bit secret is only ever hashed. SHA-256 is
 * enough for a secret of that entropy (nothing to brute-force), and keeps
 * verification cheap on every request.
 */
const KEY_PATTERN = /^lak_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
// What looks like such a key anywhere (kept out of answers, logs and stored headers): domain/key-shaped-text.ts.

export interface GeneratedKey {
  readonly id: string;
  readonly key: string;
  readonly hash: string;
}

export function generateApiKey(): GeneratedKey {
  const idHex = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  const key = `lak_${idHex}_${secret}`;
  return { id: `key_${idHex}`, key, hash: hashApiKey(key) };
}

/** The key id embedded in a well-formed key, or undefined. */
export function keyIdOf(key: string): string | undefined {
  const match = KEY_PATTERN.exec(key);
  return match ? `key_${match[1]}` : undefined;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Compares a presented key with a stored hash in time independent of where they differ. */
export function keyMatchesHash(key: string, storedHash: string): boolean {
  const presented = Buffer.from(hashApiKey(key), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
