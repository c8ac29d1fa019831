import { CREDENTIAL_FORMS, holdsCredential } from '../domain/credential-in-text.js';
import { ApiError } from '../domain/errors.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../ledger/write-limits.js';
import { presentedCredentialOf } from './presented-credential.js';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';

// Printable ASCII only: a key is an opaque token (a UUID is typical), and a control character would end up in logs.
const PRINTABLE = /^[\x20-\x7e]+$/;

/** The request's Idempotency-Key, required on every write; 400 when missing, malformed or holding a credential. */
export function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string {
  const raw = headers[IDEMPOTENCY_KEY_HEADER];
  const value = Array.isArray(raw) ? raw.join(', ') : raw;
  if (value === undefined || value.trim() === '') {
    throw new ApiError(
      'idempotency_key_missing',
      'send an Idempotency-Key header (a unique value such as a UUID per logical write, reused on its retries)',
    );
  }
  if (value.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new ApiError('idempotency_key_invalid', `the Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters, got ${value.length}`);
  }
  if (!PRINTABLE.test(value)) {
    throw new ApiError('idempotency_key_invalid', 'the Idempotency-Key must be printable ASCII (no control or non-ASCII characters)');
  }
  // Keys are stored in clear for a day, quoted in events and sent to webhook receivers: never a credential pasted into the wrong header.
  if (holdsCredential(value, presentedCredentialOf(headers.authorization))) {
    throw new ApiError(
      'idempotency_key_invalid',
      `the Idempotency-Key looks like an API key or holds one (${CREDENTIAL_FORMS}): send a unique value such as a UUID, never a credential; it was not stored`,
    );
  }
  return value;
}
