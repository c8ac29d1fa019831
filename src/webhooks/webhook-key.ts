import { randomBytes } from 'node:crypto';
import { link, open, readFile, unlink } from 'node:fs/promises';
import { inspect } from 'node:util';
import type { StoreLocation } from '../store/open-store.js';
import { SecretBox } from './secret-box.js';

export const WEBHOOK_SECRET_KEY_BYTES = 32;

const HEX = /^[0-9a-fA-F]{64}$/;
// Standard or URL-safe alphabet, padded or not: what `openssl rand -base64 32` and friends print.
const BASE64 = /^[A-Za-z0-9+/_-]{43}=?$/;

/**
 * WEBHOOK_SECRET_KEY's 32 bytes, held so that they never reach a log or a
 * JSON rendering of the config by accident (`[redacted]` there).
 */
export class WebhookSecretKey {
  readonly #bytes: Buffer;

  constructor(bytes: Buffer) {
    if (bytes.length !== WEBHOOK_SECRET_KEY_BYTES) throw new Error(`a webhook secret key is ${WEBHOOK_SECRET_KEY_BYTES} bytes, got ${bytes.length}`);
    this.#bytes = Buffer.from(bytes);
  }

  box(): SecretBox {
    return SecretBox.fromKey(this.#bytes);
  }

  toJSON(): string {
    return '[redacted]';
  }

  [inspect.custom](): string {
    return 'WebhookSecretKey [redacted]';
  }
}

/**
 * Reads a key given as 64 hex digits or as the base64 (standard or URL-safe,
 * padding optional) of 32 bytes. The error never quotes the text: it is a secret.
 */
export function parseWebhookSecretKey(text: string): WebhookSecretKey | { error: string } {
  const trimmed = text.trim();
  if (HEX.test(trimmed)) return new WebhookSecretKey(Buffer.from(trimmed, 'hex'));
  if (BASE64.test(trimmed)) {
    const bytes = Buffer.from(trimmed.replaceAll('-', '+').replaceAll('_', '/'), 'base64');
    if (bytes.length === WEBHOOK_SECRET_KEY_BYTES) return new WebhookSecretKey(bytes);
  }
  return {
    error: `must be ${WEBHOOK_SECRET_KEY_BYTES} random bytes as base64 (44 characters, e.g. from \`openssl rand -base64 32\`) or hex (64 digits); got ${trimmed.length} characters that are neither`,
  };
}

/** Where the process's webhook key came from. */
export type WebhookKeySource =
  | { readonly kind: 'configured' }
  /** The embedded store's generated key, beside its data directory. */
  | { readonly kind: 'file'; readonly path: string; readonly created: boolean }
  /** pglite://memory: a random key for this process (its endpoints die with it anyway). */
  | { readonly kind: 'in-process' }
  /** PostgreSQL without WEBHOOK_SECRET_KEY: endpoints cannot be created or rotated. */
  | { readonly kind: 'missing' };

export interface WebhookKey {
  /** What seals and opens endpoint signing secrets; undefined when no key is configured. */
  readonly box: SecretBox | undefined;
  readonly source: WebhookKeySource;
}

/** The embedded store's key file: `<dir>.webhook-key`, beside (not inside) the data directory. */
export function webhookKeyFileOf(dataDir: string): string {
  return `${dataDir.replace(/[/\\]+$/, '')}.webhook-key`;
}

/**
 * The process's webhook key (SPEC §3c): WEBHOOK_SECRET_KEY when set; else,
 * for the embedded store, the key in `<dir>.webhook-key`, generated on the
 * first start (32 random bytes, mode 0600, created atomically: a concurrent
 * start reads the one that won) and read on every later one; for
 * pglite://memory a random key of this process; for PostgreSQL, none.
 */
export async function loadWebhookKey(store: StoreLocation, configured: WebhookSecretKey | undefined): Promise<WebhookKey> {
  if (configured) return { box: configured.box(), source: { kind: 'configured' } };
  if (store.kind === 'postgres') return { box: undefined, source: { kind: 'missing' } };
  if (store.dataDir === undefined) return { box: SecretBox.fromKey(randomBytes(WEBHOOK_SECRET_KEY_BYTES)), source: { kind: 'in-process' } };
  const path = webhookKeyFileOf(store.dataDir);
  const { key, created } = await readOrCreateKeyFile(path);
  return { box: key.box(), source: { kind: 'file', path, created } };
}

async function readOrCreateKeyFile(path: string): Promise<{ key: WebhookSecretKey; created: boolean }> {
  const existing = await readKeyFile(path);
  if (existing) return { key: existing, created: false };
  const bytes = randomBytes(WEBHOOK_SECRET_KEY_BYTES);
  // Written whole and synced under a name of its own, then linked into place: the key file is never seen
  // half-written, and link() fails if another process linked its key first (then that one is read).
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(`${bytes.toString('base64')}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temporary, path);
    return { key: new WebhookSecretKey(bytes), created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const winner = await readKeyFile(path);
    if (!winner) throw new Error(`${path} vanished while it was being created`, { cause: error });
    return { key: winner, created: false };
  } finally {
    await unlink(temporary).catch(() => {});
  }
}

async function readKeyFile(path: string): Promise<WebhookSecretKey | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const parsed = parseWebhookSecretKey(text);
  if ('error' in parsed) {
    throw new Error(`${path}, the embedded store's webhook secret key, ${parsed.error}: restore the file, or set WEBHOOK_SECRET_KEY to the key it held`);
  }
  return parsed;
}
