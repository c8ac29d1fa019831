import { authenticate, authenticateSession, parseBasicAuthorization } from '../auth/authenticate.js';
import { parseBearerAuthorization } from '../auth/portal-secrets.js';
import type { Queryable } from '../store/store.js';

/**
 * Whether the `Authorization` a stream was opened with still authenticates,
 * as the same key: false once the key is revoked or expired, or the portal
 * session signed out or over. Read from the database, never the auth cache,
 * so an open stream learns of a revocation at its next check.
 */
export async function stillAuthenticates(db: Queryable, authorization: string | undefined, keyId: string): Promise<boolean> {
  const basic = parseBasicAuthorization(authorization);
  if (basic) return (await authenticate(db, basic))?.keyId === keyId;
  const session = parseBearerAuthorization(authorization);
  if (session) return (await authenticateSession(db, session))?.keyId === keyId;
  return false;
}
