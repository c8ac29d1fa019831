import { generateLinkToken, generateSessionSecret, hashPortalSecret, LINK_TOKEN_PATTERN } from '../auth/portal-secrets.js';
import type { KeyScope } from '../auth/key-scope.js';
import type { Queryable } from '../store/store.js';

/** How long a link may be exchanged, and how long at most the session it opens lasts. */
export const LINK_MINUTES = 10;
export const SESSION_MINUTES = 60;

const TIMESTAMP_TEXT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

export interface PortalLink {
  /** The one-time token (`lpt_…`): put in the link's fragment, never stored. */
  readonly token: string;
  readonly expiresAt: string;
}

/**
 * Makes a one-time link for the key `keyId` of the organization `orgId`: a
 * random token whose hash is stored, valid LINK_MINUTES. The organization's
 * rows that ended more than a day ago are deleted first (one indexed DELETE
 * on its own rows: pruning rides on making links, so no job is needed).
 */
export async function createPortalLink(db: Queryable, orgId: string, keyId: string): Promise<PortalLink> {
  await db.query(
    `DELETE FROM portal_sessions
      WHERE org_id = $1 AND link_expires_at < now() - interval '1 day'
        AND (session_expires_at IS NULL OR session_expires_at < now() - interval '1 day')`,
    [orgId],
  );
  const token = generateLinkToken();
  // to_char outside the INSERT: Citus refuses a non-IMMUTABLE function in a modification's RETURNING.
  const [row] = await db.query<{ expires_at: string }>(
    `WITH made AS (
       INSERT INTO portal_sessions (org_id, key_id, token_hash, link_expires_at)
       VALUES ($1, $2, $3, now() + make_interval(mins => $4))
       RETURNING link_expires_at
     )
     SELECT to_char(link_expires_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS expires_at FROM made`,
    [orgId, keyId, hashPortalSecret(token), LINK_MINUTES],
  );
  return { token, expiresAt: row!.expires_at };
}

export interface PortalGrant {
  /** The session's bearer secret (`lps_…`): answered once, never stored. */
  readonly session: string;
  readonly expiresAt: string;
  readonly organizationUid: string;
  readonly scope: KeyScope;
}

/** Why an exchange was refused, said to whoever holds the token (and only them: the lookup is by its hash). */
export type ExchangeRefusal = 'used' | 'expired' | 'not_valid';

/**
 * Exchanges a link's token for a session, exactly once: one UPDATE claims the
 * row only while it is unused, unexpired and its key active, so of two
 * exchanges at once one gets the row and the other nothing. The session
 * lasts SESSION_MINUTES, or until the key expires if that is sooner.
 */
export async function exchangePortalLink(db: Queryable, token: string): Promise<PortalGrant | ExchangeRefusal> {
  if (!LINK_TOKEN_PATTERN.test(token)) return 'not_valid';
  const tokenHash = hashPortalSecret(token);
  const session = generateSessionSecret();
  // to_char outside the UPDATE, as in createPortalLink (Citus).
  const [granted] = await db.query<{ expires_at: string; org_uid: string; scope: KeyScope }>(
    `WITH granted AS (
       UPDATE portal_sessions s
          SET used_at = now(), session_hash = $2,
              session_expires_at = least(now() + make_interval(mins => $3), k.expires_at)
         FROM api_keys k, organizations o
        WHERE s.token_hash = $1 AND s.used_at IS NULL AND s.link_expires_at > now()
          AND k.id = s.key_id AND k.org_id = s.org_id AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
          AND o.id = s.org_id
       RETURNING s.session_expires_at, o.uid AS org_uid, k.scope
     )
     SELECT to_char(session_expires_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS expires_at, org_uid, scope FROM granted`,
    [tokenHash, hashPortalSecret(session), SESSION_MINUTES],
  );
  if (granted) return { session, expiresAt: granted.expires_at, organizationUid: granted.org_uid, scope: granted.scope };
  const [refused] = await db.query<{ used: boolean; expired: boolean }>(
    'SELECT used_at IS NOT NULL AS used, link_expires_at <= now() AS expired FROM portal_sessions WHERE token_hash = $1',
    [tokenHash],
  );
  if (refused?.used) return 'used';
  if (refused?.expired) return 'expired';
  return 'not_valid';
}

/**
 * Ends the session whose bearer secret is `secret` now (sign out): its end is
 * set to now(), so every later check of it fails, on any node, once their
 * auth caches let go of it (AUTH_CACHE_TTL_MS). Answers whether a live
 * session was ended. The row stays, to be pruned with the others.
 */
export async function endPortalSession(db: Queryable, secret: string): Promise<boolean> {
  const ended = await db.query(
    'UPDATE portal_sessions SET session_expires_at = now() WHERE session_hash = $1 AND session_expires_at > now() RETURNING 1 AS ended',
    [hashPortalSecret(secret)],
  );
  return ended.length > 0;
}

/** The scopes a session of a `scope` key holds: every key reads. */
export function scopesOf(scope: KeyScope): KeyScope[] {
  return scope === 'read' ? ['read'] : ['read', scope];
}
