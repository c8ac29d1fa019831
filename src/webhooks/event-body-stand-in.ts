import type { SecretBox } from './secret-box.js';
import type { EndpointSecretsRow } from './delivery-claims.js';

/**
 * STAND-IN until src/webhooks/endpoint-secrets.ts (signingSecretsOf) lands:
 * the current secret, and the previous one while it has not expired.
 */
export function signingSecretsStandIn(box: SecretBox, row: EndpointSecretsRow, now: Date): string[] {
  const secrets = [box.open(row.secret_ciphertext)];
  if (row.previous_secret_ciphertext !== null && row.previous_secret_expires_at !== null && Date.parse(row.previous_secret_expires_at) > now.getTime()) {
    secrets.push(box.open(row.previous_secret_ciphertext));
  }
  return secrets;
}
