import { SECRET_LIST_PURPOSE, type SecretBox } from './secret-box.js';

/** How many secrets rotated out before the previous one keep signing at most (a delivery carries up to 8 signatures). */
export const MAX_EARLIER_SECRETS = 6;

/** The sealed secrets of one webhook_endpoints row, as selected (bytea as a Buffer or Uint8Array, timestamps as Date or text). */
export interface SealedEndpointSecrets {
  readonly secret_ciphertext: Uint8Array;
  readonly previous_secret_ciphertext: Uint8Array | null;
  readonly previous_secret_expires_at: Date | string | null;
  /** Secrets rotated out before the previous one: a sealed JSON list of EarlierSecret, newest first, or null. */
  readonly earlier_secrets: Uint8Array | null;
}

/** A secret rotated out, and when it stops signing. */
interface EarlierSecret {
  readonly secret: string;
  /** RFC 3339. */
  readonly expires_at: string;
}

/**
 * The secrets a delivery is signed with at `now`: the endpoint's current one
 * first, then each it replaced while that is still honoured (24 hours after
 * the rotation that replaced it), newest first, so a receiver that has not
 * switched yet still verifies it, however many rotations came since. Throws
 * if the current secret does not open under `box` (another
 * WEBHOOK_SECRET_KEY): signing with nothing would be worse than failing. A
 * replaced one that does not open is left out: after a lost key, the
 * documented recovery (a new key, then a rotation) signs with the new secret
 * at once.
 */
export function signingSecretsOf(box: SecretBox, row: SealedEndpointSecrets, now: Date): string[] {
  return [box.open(row.secret_ciphertext), ...honouredSecrets(box, row, now.getTime()).map(({ secret }) => secret)];
}

/**
 * The sealed list a rotation at `nowMs` leaves in earlier_secrets: the
 * secret it moves out of the previous slot, if still honoured, then the
 * earlier ones still honoured, at most MAX_EARLIER_SECRETS; null when none.
 */
export function earlierSecretsAfterRotation(box: SecretBox, row: SealedEndpointSecrets, nowMs: number): Buffer | null {
  const kept = honouredSecrets(box, row, nowMs).slice(0, MAX_EARLIER_SECRETS);
  return kept.length === 0 ? null : box.seal(JSON.stringify(kept), SECRET_LIST_PURPOSE);
}

/** The previous secret and the earlier ones, those not yet expired at `nowMs`, newest first. */
function honouredSecrets(box: SecretBox, row: SealedEndpointSecrets, nowMs: number): EarlierSecret[] {
  // Each by its own expiry: two rotations at once may leave an earlier secret expiring after the previous one.
  const previousExpiresAt = row.previous_secret_expires_at === null ? NaN : new Date(row.previous_secret_expires_at).getTime();
  const previous = row.previous_secret_ciphertext !== null && previousExpiresAt > nowMs ? openedOrNull(() => box.open(row.previous_secret_ciphertext!)) : null;
  const earlier = row.earlier_secrets === null ? null : openedOrNull(() => JSON.parse(box.open(row.earlier_secrets!, SECRET_LIST_PURPOSE)) as EarlierSecret[]);
  return [
    ...(previous === null ? [] : [{ secret: previous, expires_at: new Date(previousExpiresAt).toISOString() }]),
    ...(earlier ?? []).filter(({ expires_at }) => Date.parse(expires_at) > nowMs),
  ];
}

/** What `open` returns, or null if it throws: sealed under a key since lost (or altered). */
function openedOrNull<T>(open: () => T): T | null {
  try {
    return open();
  } catch {
    return null;
  }
}
