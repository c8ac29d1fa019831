import { DomainError } from '../domain/domain-error.js';
import { requireOrganization } from '../organizations/organizations.js';
import type { Queryable } from '../store/store.js';
import { generateApiKey } from './api-key-format.js';
import type { KeyScope } from './key-scope.js';

export interface ApiKeyInfo {
  readonly id: string;
  readonly org: string;
  readonly created_at: string;
  readonly expires_at: string | null;
  readonly revoked_at: string | null;
  readonly scope: KeyScope;
  readonly status: 'active' | 'expired' | 'revoked';
}

const KEY_ID_PATTERN = /^key_[0-9a-f]{16}$/;
const TIMESTAMP_TEXT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * Creates a key and returns it in full: the only time it is ever visible. An
 * expiry must be in the future. Keys are read-only unless `scope` is `write`.
 */
export async function createApiKey(
  db: Queryable,
  orgUid: string,
  expiresAt?: string,
  scope: KeyScope = 'read',
): Promise<{ id: string; org: string; key: string; expires_at: string | null; scope: KeyScope }> {
  const org = await requireOrganization(db, orgUid);
  if (expiresAt !== undefined) {
    const [row] = await db.query<{ past: boolean }>('SELECT $1::timestamptz <= now() AS past', [expiresAt]);
    if (row?.past) throw new DomainError(`expiry ${expiresAt} is not in the future: the key would be dead on arrival`);
  }
  const generated = generateApiKey();
  await db.query('INSERT INTO api_keys (id, org_id, secret_hash, expires_at, scope) VALUES ($1, $2, $3, $4::timestamptz, $5)', [
    generated.id,
    org.id,
    generated.hash,
    expiresAt ?? null,
    scope,
  ]);
  return { id: generated.id, org: org.uid, key: generated.key, expires_at: expiresAt ?? null, scope };
}

export async function listApiKeys(db: Queryable, orgUid: string): Promise<ApiKeyInfo[]> {
  const org = await requireOrganization(db, orgUid);
  return db.query<ApiKeyInfo>(
    `SELECT k.id, $2::text AS org,
            to_char(k.created_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS created_at,
            to_char(k.expires_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS expires_at,
            to_char(k.revoked_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS revoked_at,
            k.scope,
            CASE WHEN k.revoked_at IS NOT NULL THEN 'revoked'
                 WHEN k.expires_at IS NOT NULL AND k.expires_at <= now() THEN 'expired'
                 ELSE 'active' END AS status
       FROM api_keys k WHERE k.org_id = $1 ORDER BY k.created_at, k.id`,
    [org.id, org.uid],
  );
}

/**
 * Revokes a key at once. Revoking an already revoked key is not an error.
 * The UPDATE sets only an unrevoked key's time and returns no function of
 * it: Citus refuses now() in a COALESCE of an UPDATE and to_char in a
 * modification's RETURNING (api_keys is a reference table there).
 */
export async function revokeApiKey(db: Queryable, keyId: string): Promise<{ id: string; org: string; revoked_at: string }> {
  const rows = await db.query<{ id: string; org: string; revoked_at: string }>(
    `WITH revoked AS (UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING revoked_at)
     SELECT k.id, o.uid AS org, to_char(coalesce((SELECT r.revoked_at FROM revoked r), k.revoked_at, now()) AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS revoked_at
       FROM api_keys k JOIN organizations o ON o.id = k.org_id WHERE k.id = $1`,
    [keyId],
  );
  const row = rows[0];
  // Only a well-formed key id is quoted back: whatever else was passed may be a secret.
  if (!row) throw new DomainError(KEY_ID_PATTERN.test(keyId) ? `no API key '${keyId}'` : 'no API key with that id (key ids look like key_ and 16 hex digits)');
  return row;
}

/** Revokes every key of the organization that still works (not revoked, not expired); returns their ids, oldest first. */
export async function revokeActiveApiKeys(db: Queryable, orgUid: string): Promise<string[]> {
  const org = await requireOrganization(db, orgUid);
  const rows = await db.query<{ id: string }>(
    `WITH revoked AS (
       UPDATE api_keys SET revoked_at = now()
        WHERE org_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
       RETURNING id, created_at)
     SELECT id FROM revoked ORDER BY created_at, id`,
    [org.id],
  );
  return rows.map((row) => row.id);
}
