import { parseBasicAuthorization } from '../auth/authenticate.js';
import type { PresentedCredential } from '../domain/credential-in-text.js';

/** The credentials in a request's `Authorization` header, which no text it sends for storing may carry (holdsCredential). */
export function presentedCredentialOf(authorization: string | string[] | undefined): PresentedCredential | undefined {
  return typeof authorization === 'string' ? parseBasicAuthorization(authorization) : undefined;
}
