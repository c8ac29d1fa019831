import { createHmac, randomBytes } from 'node:crypto';

/** What a delivery signs: `webhook-id`, `webhook-timestamp` (Unix seconds) and the exact body sent. */
export interface SignedMessage {
  readonly id: string;
  readonly timestamp: number;
  readonly body: string;
}

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Bytes of a new secret. The Standard Webhooks specification asks for 24 to
 * 64; 32 is the size of the HMAC-SHA256 output, so guessing the key is no
 * easier than forging a signature.
 */
export const SIGNING_SECRET_BYTES = 32;

/** A new endpoint signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SIGNING_SECRET_BYTES).toString('base64')}`;
}

/**
 * The HMAC key of a secret as the reference library (`standardwebhooks`)
 * derives it: the `whsec_` prefix, if any, removed and the rest base64-decoded.
 * Strict base64, as that library's decoder is: a secret Node's lenient decoder
 * would quietly read differently is refused instead.
 */
export function signingKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (encoded === '' || !BASE64.test(encoded)) throw new Error('a webhook signing secret is whsec_ followed by non-empty base64');
  return Buffer.from(encoded, 'base64');
}

/**
 * The `webhook-signature` header of a message: `v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">` for each secret, separated by spaces (two secrets
 * sign while a rotated-out one is still honoured).
 */
export function signPayload(message: SignedMessage, secrets: readonly string[]): string {
  return signWithKeys(message, secrets.map(signingKey));
}

/** signPayload with the secrets' HMAC keys (signingKey) derived once: a deliverer signs many messages with each. */
export function signWithKeys(message: SignedMessage, keys: readonly Buffer[]): string {
  if (keys.length === 0) throw new Error('signPayload needs at least one secret');
  // 1e11 seconds is the year 5138: a larger value is Date.now() passed by mistake.
  if (!Number.isSafeInteger(message.timestamp) || message.timestamp < 0 || message.timestamp >= 1e11) {
    throw new Error(`webhook timestamp must be whole Unix seconds, got ${message.timestamp}`);
  }
  const signed = `${message.id}.${message.timestamp}.${message.body}`;
  return keys.map((key) => `v1,${createHmac('sha256', key).update(signed, 'utf8').digest('base64')}`).join(' ');
}
