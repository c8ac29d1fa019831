import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Bound to every sealed secret: a ciphertext of another purpose never opens as a signing secret. */
const ASSOCIATED_DATA = Buffer.from('lending-api webhook signing secret v1');
/** Bound to a sealed list of secrets rotated out (src/webhooks/endpoint-secrets.ts): it never opens as one secret, nor one as it. */
export const SECRET_LIST_PURPOSE = Buffer.from('lending-api webhook earlier secrets v1');

/**
 * Webhook signing secrets at rest (SPEC §3c): AES-256-GCM under
 * WEBHOOK_SECRET_KEY, which is never in the database. A sealed secret is
 * nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes), a fresh random nonce each
 * time. Opening one sealed under another key, or altered, throws.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /** `key`: the 32 bytes of WEBHOOK_SECRET_KEY. */
  static fromKey(key: Buffer): SecretBox {
    if (key.length !== 32) throw new Error(`the webhook secret key must be 32 bytes, got ${key.length}`);
    return new SecretBox(Buffer.from(key));
  }

  /** `purpose`: what the text is, bound to the ciphertext (a signing secret unless said). */
  seal(secret: string, purpose: Buffer = ASSOCIATED_DATA): Buffer {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce).setAAD(purpose);
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return Buffer.concat([nonce, sealed, cipher.getAuthTag()]);
  }

  /** Throws unless `sealed` was sealed under this key for this `purpose` and is unaltered. */
  open(sealed: Uint8Array, purpose: Buffer = ASSOCIATED_DATA): string {
    const bytes = Buffer.from(sealed);
    if (bytes.length < NONCE_BYTES + TAG_BYTES) throw new Error('a sealed webhook secret is too short');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, NONCE_BYTES)).setAAD(purpose);
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}
