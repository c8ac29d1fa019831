import { listApiKeys, type ApiKeyInfo } from '../auth/api-keys.js';
import type { KeyScope } from '../auth/key-scope.js';
import { DomainError } from '../domain/domain-error.js';
import { requireOrganization } from '../organizations/organizations.js';
import type { Queryable } from '../store/store.js';
import { createPortalLink } from './portal-sessions.js';

export interface OperatorPortalLink {
  readonly org: string;
  readonly key_id: string;
  readonly scope: KeyScope;
  readonly url: string;
  readonly expires_at: string;
}

/**
 * A one-time portal link made by the operator (`lending-api portal`, the
 * demo) for a key of the organization: `keyId`, which must be active, or
 * when none is named the organization's newest active `read` key — a link is
 * handed to a person, and the least it can do is the safest default; a write
 * or webhooks session is asked for by naming its key. `baseUrl` is where
 * the service is reached (no trailing slash).
 */
export async function operatorPortalLink(db: Queryable, orgUid: string, baseUrl: string, keyId?: string): Promise<OperatorPortalLink> {
  const org = await requireOrganization(db, orgUid);
  const keys = await listApiKeys(db, org.uid);
  const active = keys.filter((key) => key.status === 'active');
  const key = keyId === undefined ? active.filter((candidate) => candidate.scope === 'read').at(-1) : active.find((candidate) => candidate.id === keyId);
  if (!key) throw new DomainError(noKeyMessage(org.uid, active, keyId, keys));
  const link = await createPortalLink(db, org.id, key.id);
  return { org: org.uid, key_id: key.id, scope: key.scope, url: `${baseUrl}/portal/#token=${link.token}`, expires_at: link.expiresAt };
}

function noKeyMessage(org: string, active: readonly ApiKeyInfo[], keyId: string | undefined, keys: readonly ApiKeyInfo[]): string {
  const listed = active.length === 0 ? 'it has no active key (`key create --org ORG`)' : `its active keys: ${active.map((key) => `${key.id} (${key.scope})`).join(', ')}`;
  if (keyId === undefined) return `${org} has no active read key to make a link with: name one with --key; ${listed}`;
  const known = keys.find((key) => key.id === keyId);
  const why = known ? `is ${known.status}` : /^key_[0-9a-f]{16}$/.test(keyId) ? 'is not a key of this organization' : 'is not a key id (key_ and 16 hex digits)';
  return `--key ${known || /^key_[0-9a-f]{16}$/.test(keyId) ? keyId : 'given'} ${why}; ${listed}`;
}
