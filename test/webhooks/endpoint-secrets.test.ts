import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { earlierSecretsAfterRotation, signingSecretsOf, type SealedEndpointSecrets } from '../../src/webhooks/endpoint-secrets.js';
import { SECRET_LIST_PURPOSE, SecretBox } from '../../src/webhooks/secret-box.js';
import { newSigningSecret } from '../../src/webhooks/signature.js';

const box = SecretBox.fromKey(randomBytes(32));
const HOUR = 3_600_000;
const at = (ms: number) => new Date(ms).toISOString();

describe('the secrets an endpoint signs with', () => {
  it('honours each replaced secret until its own expiry, even one that expires after the previous one (two rotations at once)', () => {
    const now = Date.parse('2026-11-28T12:00:00Z');
    const [current, previous, earlier] = [newSigningSecret(), newSigningSecret(), newSigningSecret()];
    // The earlier secret's expiry lies after the previous one's: the second of two concurrent rotations read an older now().
    const row: SealedEndpointSecrets = {
      secret_ciphertext: box.seal(current),
      previous_secret_ciphertext: box.seal(previous),
      previous_secret_expires_at: at(now + HOUR),
      earlier_secrets: box.seal(JSON.stringify([{ secret: earlier, expires_at: at(now + HOUR + 5) }]), SECRET_LIST_PURPOSE),
    };
    expect(signingSecretsOf(box, row, new Date(now))).toEqual([current, previous, earlier]);
    expect(signingSecretsOf(box, row, new Date(now + HOUR + 1))).toEqual([current, earlier]);
    expect(signingSecretsOf(box, row, new Date(now + HOUR + 6))).toEqual([current]);
    // A rotation now keeps both, previous first; after both expired it keeps none.
    const kept = earlierSecretsAfterRotation(box, row, now);
    expect(JSON.parse(box.open(kept!, SECRET_LIST_PURPOSE))).toEqual([
      { secret: previous, expires_at: at(now + HOUR) },
      { secret: earlier, expires_at: at(now + HOUR + 5) },
    ]);
    expect(earlierSecretsAfterRotation(box, row, now + HOUR + 6)).toBeNull();
  });

  it('never opens a sealed list as a secret nor a secret as a list, and skips a list that does not open instead of failing', () => {
    const secret = newSigningSecret();
    const list = box.seal(JSON.stringify([{ secret, expires_at: at(Date.now() + HOUR) }]), SECRET_LIST_PURPOSE);
    expect(() => box.open(list)).toThrow();
    expect(() => box.open(box.seal(secret), SECRET_LIST_PURPOSE)).toThrow();
    const current = newSigningSecret();
    const swapped: SealedEndpointSecrets = {
      secret_ciphertext: box.seal(current),
      previous_secret_ciphertext: null,
      previous_secret_expires_at: null,
      earlier_secrets: box.seal(secret),
    };
    expect(signingSecretsOf(box, swapped, new Date())).toEqual([current]);
    expect(earlierSecretsAfterRotation(box, swapped, Date.now())).toBeNull();
    // The current secret is another matter: without it nothing is signed, so that fails loudly.
    expect(() => signingSecretsOf(box, { ...swapped, secret_ciphertext: list }, new Date())).toThrow();
  });
});
