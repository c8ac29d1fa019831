import { randomBytes } from 'node:crypto';
import type { KeyScope } from '../../src/auth/key-scope.js';
import { createApiKey } from '../../src/auth/api-keys.js';
import { createOrganization, type Organization } from '../../src/organizations/organizations.js';
import type { Queryable } from '../../src/store/store.js';

export interface Tenant {
  readonly org: Organization;
  readonly keyId: string;
  readonly apiKey: string;
  /** `Authorization` header value for this tenant's key. */
  readonly authorization: string;
}

export function basicAuthorization(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** A fresh organization with one active key (read-only unless `scope` says write); tests stay isolated by tenant. */
export async function createTenant(db: Queryable, name = 'Test Lender', scope: KeyScope = 'read'): Promise<Tenant> {
  const org = await createOrganization(db, name, `org_test_${randomBytes(6).toString('hex')}`);
  const key = await createApiKey(db, org.uid, undefined, scope);
  return { org, keyId: key.id, apiKey: key.key, authorization: basicAuthorization(org.uid, key.key) };
}

/**
 * A key that has expired: created with a future expiry (createApiKey refuses
 * a past one), then moved into the past, as time would.
 */
export async function createExpiredApiKey(db: Queryable, orgUid: string): Promise<{ id: string; key: string }> {
  const key = await createApiKey(db, orgUid, '2999-01-01T00:00:00.000000Z');
  await db.query(`UPDATE api_keys SET expires_at = '2020-01-01T00:00:00Z' WHERE id = $1`, [key.id]);
  return key;
}
