import type { SecretBox } from './secret-box.js';

/** The sealed secrets of one webhook_endpoints row, as selected (bytea as a Buffer or Uint8Array, timestamps as Date or text). */
export interface SealedEndpointSecrets {
  readonly secret_ciphertext: Uint8Array;
  readonly previous_secret_ciphertext: Uint8Array | null;
  readonly previous_secret_expires_at: Date | string | null;
}

/**
 * The secrets a delivery is signed with at `now`: the endpoint's current one
 * first, then the one it replaced while that is still honoured (24 hours
 * after `rotate_secret`), so a receiver that has not switched yet still
 * verifies it. Throws if a secret does not open under `box` (another
 * WEBHOOK_SECRET_KEY): signing with nothing would be worse than failing.
 */
export function signingSecretsOf(box: SecretBox, row: SealedEndpointSecrets, now: Date): string[] {
  const secrets = [box.open(row.secret_ciphertext)];
  const expiresAt = row.previous_secret_expires_at === null ? null : new Date(row.previous_secret_expires_at);
  if (row.previous_secret_ciphertext !== null && expiresAt !== null && expiresAt.getTime() > now.getTime()) {
    secrets.push(box.open(row.previous_secret_ciphertext));
  }
  return secrets;
}
