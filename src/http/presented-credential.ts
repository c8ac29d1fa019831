import { parseBasicAuthorization } from '../auth/authenticate.js';
import { parseBearerAuthorization } from '../auth/portal-secrets.js';
import type { PresentedCredential } from '../domain/credential-in-text.js';

/** The credentials in a request's `Authorization` header (Basic, or a portal session's Bearer), which no text it sends for storing may carry (holdsCredential). */
export function presentedCredentialOf(authorization: string | string[] | undefined): PresentedCredential | undefined {
  if (typeof authorization !== 'string') return undefined;
  const session = parseBearerAuthorization(authorization);
  return session === undefined ? parseBasicAuthorization(authorization) : { organizationId: '', apiKey: session };
}
