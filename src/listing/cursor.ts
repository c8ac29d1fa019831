import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { ApiError } from '../domain/errors.js';

/**
 * A position in a list's ordering, between two rows: the next page holds
 * the rows after it (`after`) or the rows before it (`before`), in the
 * list's order. `inclusive` also takes the row at the position itself (the
 * way back from an empty page, whose position is the only row it knows).
 */
export interface CursorPosition {
  readonly direction: 'after' | 'before';
  readonly inclusive: boolean;
  /** The ordering field's value as text, exact (see selectExpression in sql.ts). */
  readonly sortKey: string;
  readonly rowId: string;
}

/**
 * What a cursor is bound to: it continues only the list it came from — the
 * same organization, collection, filters (normalized values) and ordering.
 */
export interface CursorBinding {
  readonly orgId: string;
  readonly collection: string;
  /** `param=value` pairs, normalized values, sorted: the order the client wrote them in does not matter. */
  readonly filters: readonly string[];
  /** `field` or `-field`. */
  readonly ordering: string;
}

/*
 * Wire form: base64url(nonce ‖ AES-256-GCM ciphertext ‖ tag) of a JSON
 * payload, under a key derived (HKDF-SHA256) from the installation's cursor
 * secret. The payload carries the position and, for precise error messages,
 * the collection, the ordering and digests of the organization and filters.
 * Encrypted, not merely signed: the position holds the row's internal id,
 * from a sequence shared by every organization, and a readable id would let
 * one tenant count another's inserts. The id is written at a fixed width so
 * that not even the cursor's length follows the sequence. The tag keeps it
 * tamper-evident. Opaque to clients: they copy it from a link.
 */
const VERSION = 2;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const ROW_ID_DIGITS = 19; // a bigint's largest value, 9223372036854775807
/** The longest cursor accepted; the service's own are shorter (a sort key of a bounded field, a fixed-width id). */
export const MAX_CURSOR_LENGTH = 4096;
const WIRE_FORM = /^[A-Za-z0-9_-]+$/;
// What cursors of version 1 looked like: a signed, readable payload "." its MAC.
const VERSION_1_FORM = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const KEY_INFO = 'lending-api cursor encryption v2';

interface Payload {
  v: number;
  d: 'a' | 'b';
  i?: 1;
  k: string;
  r: string;
  c: string;
  o: string;
  g: string;
  f: string;
}

export function encodeCursor(position: CursorPosition, binding: CursorBinding, secret: Buffer): string {
  const payload: Payload = {
    v: VERSION,
    d: position.direction === 'after' ? 'a' : 'b',
    ...(position.inclusive ? { i: 1 as const } : {}),
    k: position.sortKey,
    r: position.rowId.padStart(ROW_ID_DIGITS, '0'),
    c: binding.collection,
    o: binding.ordering,
    g: digest(binding.orgId),
    f: digest(binding.filters.join('&')),
  };
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', encryptionKey(secret), nonce, { authTagLength: TAG_BYTES });
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, ciphertext, cipher.getAuthTag()]).toString('base64url');
}

/**
 * The position a cursor stands for, or undefined for the empty cursor (the
 * start of the list). Anything else is a 422 `invalid_parameter` on
 * `cursor` that says why: garbled, altered or not issued here, or issued
 * for another list.
 */
export function decodeCursor(raw: string, binding: CursorBinding, secret: Buffer): CursorPosition | undefined {
  if (raw === '') return undefined;
  if (raw.length <= MAX_CURSOR_LENGTH && VERSION_1_FORM.test(raw)) {
    throw invalidCursor('cursor is from an older version of this server: start the walk again with cursor= (empty)');
  }
  const bytes = raw.length <= MAX_CURSOR_LENGTH && WIRE_FORM.test(raw) ? Buffer.from(raw, 'base64url') : undefined;
  if (bytes === undefined || bytes.length < NONCE_BYTES + TAG_BYTES + 1) {
    throw invalidCursor('cursor is garbled: copy the cursor of a next or previous link unchanged, or give cursor= (empty) to start at the first record');
  }
  // base64url's last character carries spare bits, so several spellings decode to the same bytes: a cursor is
  // only ever the exact text of a link, and any other spelling counts as altered.
  const plaintext = bytes.toString('base64url') === raw ? decrypt(bytes, secret) : undefined;
  if (plaintext === undefined) {
    throw invalidCursor('cursor was altered or was not issued by this server: copy the cursor of a next or previous link unchanged');
  }
  const payload = parsePayload(plaintext);
  if (!payload) throw invalidCursor('cursor is from an older version of this server: start the walk again with cursor= (empty)');
  const foreign = bindingMismatch(payload, binding);
  if (foreign) throw invalidCursor(`cursor belongs to another list: ${foreign}; a cursor continues only the list it came from`);
  return { direction: payload.d === 'a' ? 'after' : 'before', inclusive: payload.i === 1, sortKey: payload.k, rowId: BigInt(payload.r).toString() };
}

/** The payload's text, or undefined when the tag does not check out (altered, or another installation's key). */
function decrypt(bytes: Buffer, secret: Buffer): string | undefined {
  const decipher = createDecipheriv('aes-256-gcm', encryptionKey(secret), bytes.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

// One derivation per secret: the process holds one secret (CursorSecret reads it once).
const derivedKeys = new WeakMap<Buffer, Buffer>();

function encryptionKey(secret: Buffer): Buffer {
  let key = derivedKeys.get(secret);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), KEY_INFO, 32));
    derivedKeys.set(secret, key);
  }
  return key;
}

function bindingMismatch(payload: Payload, binding: CursorBinding): string | undefined {
  if (payload.g !== digest(binding.orgId)) return 'it was issued to another organization';
  if (payload.c !== binding.collection) return `it was issued for /api/${payload.c}/, not /api/${binding.collection}/`;
  if (payload.o !== binding.ordering) return `it was issued for order_by=${payload.o}, not order_by=${binding.ordering}`;
  if (payload.f !== digest(binding.filters.join('&'))) return 'it was issued with other filters; give the same filters as the request it came from';
  return undefined;
}

function parsePayload(plaintext: string): Payload | undefined {
  let value: unknown;
  try {
    value = JSON.parse(plaintext);
  } catch {
    return undefined;
  }
  const payload = value as Partial<Payload> | null;
  const strings = [payload?.k, payload?.r, payload?.c, payload?.o, payload?.g, payload?.f];
  if (payload?.v !== VERSION || (payload.d !== 'a' && payload.d !== 'b') || strings.some((s) => typeof s !== 'string')) return undefined;
  if (payload.r?.length !== ROW_ID_DIGITS || !/^[0-9]+$/.test(payload.r)) return undefined;
  return payload as Payload;
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest().subarray(0, 9).toString('base64url');
}

function invalidCursor(detail: string): ApiError {
  return ApiError.invalidParameters([{ param: 'cursor', detail }]);
}
