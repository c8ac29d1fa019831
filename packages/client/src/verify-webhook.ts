/**
 * Verifies a lending-api webhook delivery (Standard Webhooks: `webhook-id`,
 * `webhook-timestamp`, `webhook-signature`). Self-contained and free of
 * dependencies, Node built-ins included: it runs on Web Crypto, so the same
 * file serves Node 20+, browsers, Deno, Bun and edge runtimes (the SDK ships
 * a copy). Web Crypto is asynchronous, hence the promise.
 *
 * ```ts
 * const event = await verifyWebhook(rawBody, request.headers, process.env.WEBHOOK_SECRET!);
 * ```
 * Pass the body exactly as received (before any JSON parsing): a re-serialized
 * body does not match its signature.
 */

export type WebhookVerificationErrorCode =
  | 'invalid_secret'
  | 'missing_header'
  | 'invalid_timestamp'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'no_matching_signature'
  | 'invalid_body';

export class WebhookVerificationError extends Error {
  constructor(
    readonly code: WebhookVerificationErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/** A plain header object (Node's `IncomingMessage.headers`, Express, Fastify) or a Fetch `Headers`. */
export type WebhookHeaders = Readonly<Record<string, string | readonly string[] | undefined>> | { get(name: string): string | null };

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from now, either way, in seconds (default 300). */
  readonly toleranceSeconds?: number;
  /** The current time in Unix seconds (default: the clock). */
  readonly now?: number;
}

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function base64Bytes(text: string): Uint8Array<ArrayBuffer> | null {
  if (!BASE64.test(text)) return null;
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}

function headerValue(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const plain = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  const key = Object.keys(plain).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : plain[key];
  return typeof value === 'string' ? value : value?.join(' ');
}

function requiredHeader(headers: WebhookHeaders, name: string): string {
  const value = headerValue(headers, name)?.trim();
  if (!value) throw new WebhookVerificationError('missing_header', `the ${name} header is missing`);
  return value;
}

/** Compares every byte whatever the first difference, so the time taken does not reveal how much of a guess was right. */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let index = 0; index < a.length; index++) difference |= a[index]! ^ b[index]!;
  return difference === 0;
}

/**
 * Checks a delivery's signature and age with the endpoint's `whsec_…` secret
 * and returns the event it carries (the parsed body). Throws a
 * WebhookVerificationError, with a `code`, when a header is missing, the
 * timestamp is further than `toleranceSeconds` from now, no `v1` signature in
 * `webhook-signature` matches (any one matching is enough: after a secret
 * rotation two are sent), or the body is not JSON.
 */
export async function verifyWebhook<Event = unknown>(
  body: string,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<Event> {
  const key = base64Bytes(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
  if (key === null || key.length === 0) throw new WebhookVerificationError('invalid_secret', 'the secret must be whsec_ followed by base64');
  const id = requiredHeader(headers, 'webhook-id');
  const timestampText = requiredHeader(headers, 'webhook-timestamp');
  const signatures = requiredHeader(headers, 'webhook-signature');

  if (!/^\d{1,15}$/.test(timestampText)) {
    throw new WebhookVerificationError('invalid_timestamp', `webhook-timestamp must be Unix seconds, got '${timestampText.slice(0, 40)}'`);
  }
  const timestamp = Number(timestampText);
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (now - timestamp > tolerance) {
    throw new WebhookVerificationError('timestamp_too_old', `webhook-timestamp is ${now - timestamp} s old, more than the ${tolerance} s allowed`);
  }
  if (timestamp - now > tolerance) {
    throw new WebhookVerificationError('timestamp_too_new', `webhook-timestamp is ${timestamp - now} s ahead, more than the ${tolerance} s allowed`);
  }

  const hmacKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const signedContent = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  const expected = new Uint8Array(await crypto.subtle.sign('HMAC', hmacKey, signedContent));
  let matched = false;
  for (const candidate of signatures.split(' ')) {
    const [version, encoded] = candidate.split(',', 2);
    const given = version === 'v1' && encoded !== undefined ? base64Bytes(encoded) : null;
    if (given !== null && constantTimeEqual(given, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('no_matching_signature', 'no webhook-signature matches the body with this secret');

  try {
    return JSON.parse(body) as Event;
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the signed body is not JSON');
  }
}
