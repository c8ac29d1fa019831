import type { Queryable } from '../store/store.js';
import { keyIdOf, keyMatchesHash } from './api-key-format.js';
import { hashPortalSecret } from './portal-secrets.js';
import type { KeyScope } from './key-scope.js';

export interface AuthContext {
  /** Internal organization id: every query is scoped by it. */
  readonly orgId: string;
  readonly orgUid: string;
  readonly keyId: string;
  /** `write` keys may record ledger entries; `read` keys only read. */
  readonly scope: KeyScope;
  /** When the credentials stop working (ms since the epoch), if they do: the key's expiry, or the portal session's end. */
  readonly keyExpiresAtMs?: number;
  /** Set when the request authenticated with a portal session (Bearer) made from the key `keyId`. */
  readonly portalSession?: true;
}

export interface Credentials {
  readonly organizationId: string;
  readonly apiKey: string;
}

/** Reads an `Authorization: Basic …` header; undefined when absent or malformed. */
export function parseBasicAuthorization(header: string | undefined): Credentials | undefined {
  if (!header) return undefined;
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  return { organizationId: decoded.slice(0, colon), apiKey: decoded.slice(colon + 1) };
}

// Compared against when the key id is unknown, so that path does the same work.
const UNKNOWN_KEY_HASH = '0'.repeat(64);

/**
 * Checks an organization id and API key. Resolves to the caller's
 * organization, or undefined for any failure — which half was wrong is never
 * told apart, to the caller or in timing that depends on the secret.
 */
export async function authenticate(db: Queryable, credentials: Credentials): Promise<AuthContext | undefined> {
  const keyId = keyIdOf(credentials.apiKey);
  if (!keyId) return undefined;
  const rows = await db.query<{ org_id: string; org_uid: string; secret_hash: string; scope: KeyScope; usable: boolean; expires_ms: string | null }>(
    `SELECT o.id::text AS org_id, o.uid AS org_uid, k.secret_hash, k.scope,
            floor(extract(epoch FROM k.expires_at) * 1000)::text AS expires_ms,
            (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) AS usable
       FROM api_keys k JOIN organizations o ON o.id = k.org_id
      WHERE k.id = $1`,
    [keyId],
  );
  const row = rows[0];
  const matches = keyMatchesHash(credentials.apiKey, row?.secret_hash ?? UNKNOWN_KEY_HASH);
  if (!row || !matches || !row.usable || row.org_uid !== credentials.organizationId) return undefined;
  return {
    orgId: row.org_id,
    orgUid: row.org_uid,
    keyId,
    scope: row.scope,
    ...(row.expires_ms === null ? {} : { keyExpiresAtMs: Number(row.expires_ms) }),
  };
}

/**
 * Checks a portal session's bearer secret: a session not yet ended, whose key
 * is still active. Resolves to the organization and the scope of the key that
 * made it, as they are now (a revoked key ends the session at once here; the
 * auth cache may reuse this answer for its TTL, as for a key). Expires at the
 * session's end or the key's expiry, whichever is first.
 */
export async function authenticateSession(db: Queryable, secret: string): Promise<AuthContext | undefined> {
  const rows = await db.query<{ org_id: string; org_uid: string; key_id: string; scope: KeyScope; ends_ms: string }>(
    `SELECT o.id::text AS org_id, o.uid AS org_uid, k.id AS key_id, k.scope,
            floor(extract(epoch FROM least(s.session_expires_at, k.expires_at)) * 1000)::text AS ends_ms
       FROM portal_sessions s
       JOIN api_keys k ON k.id = s.key_id
       JOIN organizations o ON o.id = s.org_id
      WHERE s.session_hash = $1 AND s.session_expires_at > now()
        AND k.org_id = s.org_id AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`,
    [hashPortalSecret(secret)],
  );
  const row = rows[0];
  if (!row) return undefined;
  return { orgId: row.org_id, orgUid: row.org_uid, keyId: row.key_id, scope: row.scope, keyExpiresAtMs: Number(row.ends_ms), portalSession: true };
}
