import { createHash, randomBytes } from 'node:crypto';

/**
 * The two secrets of the portal (docs/portal.md "Access: sessions and links"):
 * a one-time link's token, `lpt_` and 256 random bits (base64url), carried in
 * the link's fragment and exchanged once; and a session's bearer secret,
 * `lps_` and 256 random bits, sent as `Authorization: Bearer lps_…`. Only
 * their SHA-256 is stored: at that entropy nothing is left to brute-force, and
 * a lookup by hash leaks nothing through its timing.
 */
export const LINK_TOKEN_PATTERN = /^lpt_[A-Za-z0-9_-]{43}$/;
export const SESSION_SECRET_PATTERN = /^lps_[A-Za-z0-9_-]{43}$/;

export function generateLinkToken(): string {
  return `lpt_${randomBytes(32).toString('base64url')}`;
}

export function generateSessionSecret(): string {
  return `lps_${randomBytes(32).toString('base64url')}`;
}

export function hashPortalSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** The session secret of an `Authorization: Bearer lps_…` header; undefined for anything else. */
export function parseBearerAuthorization(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  const secret = match?.[1];
  return secret !== undefined && SESSION_SECRET_PATTERN.test(secret) ? secret : undefined;
}
