import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
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
 * Wire form: base64url(JSON payload) "." base64url(HMAC-SHA256 over the
 * payload's base64url, truncated to 128 bits). The payload carries the
 * position and, for precise error messages, the collection, the ordering
 * and digests of the organization and filters; the MAC makes all of it
 * tamper-evident. Opaque to clients: they copy it from a link.
 */
const VERSION = 1;
const MAC_BYTES = 16;
const MAX_CURSOR_LENGTH = 4096;
const WIRE_FORM = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/;

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
    r: position.rowId,
    c: binding.collection,
    o: binding.ordering,
    g: digest(binding.orgId),
    f: digest(binding.filters.join('&')),
  };
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${mac(body, secret).toString('base64url')}`;
}

/**
 * The position a cursor stands for, or undefined for the empty cursor (the
 * start of the list). Anything else is a 422 `invalid_parameter` on
 * `cursor` that says why: garbled, altered or not issued here, or issued
 * for another list.
 */
export function decodeCursor(raw: string, binding: CursorBinding, secret: Buffer): CursorPosition | undefined {
  if (raw === '') return undefined;
  const match = raw.length <= MAX_CURSOR_LENGTH ? WIRE_FORM.exec(raw) : null;
  const body = match?.[1];
  const signature = match?.[2];
  if (body === undefined || signature === undefined) {
    throw invalidCursor('cursor is garbled: copy the cursor of a next or previous link unchanged, or give cursor= (empty) to start at the first record');
  }
  // Compared as the text issued, not as decoded bytes: base64url's last character carries spare bits, so
  // several spellings decode to one MAC, and a cursor is only ever the exact text of a link.
  const expected = Buffer.from(mac(body, secret).toString('base64url'));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw invalidCursor('cursor was altered or was not issued by this server: copy the cursor of a next or previous link unchanged');
  }
  const payload = parsePayload(body);
  if (!payload) throw invalidCursor('cursor is from an older version of this server: start the walk again with cursor= (empty)');
  const foreign = bindingMismatch(payload, binding);
  if (foreign) throw invalidCursor(`cursor belongs to another list: ${foreign}; a cursor continues only the list it came from`);
  return { direction: payload.d === 'a' ? 'after' : 'before', inclusive: payload.i === 1, sortKey: payload.k, rowId: payload.r };
}

function bindingMismatch(payload: Payload, binding: CursorBinding): string | undefined {
  if (payload.g !== digest(binding.orgId)) return 'it was issued to another organization';
  if (payload.c !== binding.collection) return `it was issued for /api/${payload.c}/, not /api/${binding.collection}/`;
  if (payload.o !== binding.ordering) return `it was issued for order_by=${payload.o}, not order_by=${binding.ordering}`;
  if (payload.f !== digest(binding.filters.join('&'))) return 'it was issued with other filters; give the same filters as the request it came from';
  return undefined;
}

function parsePayload(body: string): Payload | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const payload = value as Partial<Payload> | null;
  const strings = [payload?.k, payload?.r, payload?.c, payload?.o, payload?.g, payload?.f];
  if (payload?.v !== VERSION || (payload.d !== 'a' && payload.d !== 'b') || strings.some((s) => typeof s !== 'string')) return undefined;
  if (!/^[0-9]+$/.test(payload.r ?? '')) return undefined;
  return payload as Payload;
}

function mac(body: string, secret: Buffer): Buffer {
  return createHmac('sha256', secret).update(body).digest().subarray(0, MAC_BYTES);
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest().subarray(0, 9).toString('base64url');
}

function invalidCursor(detail: string): ApiError {
  return ApiError.invalidParameters([{ param: 'cursor', detail }]);
}
