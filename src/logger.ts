import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { ASCII_CONTROL_CHARACTERS } from './domain/well-formed-text.js';

// An API key (`lak_<id>_<secret>`) or Basic credentials inside any logged
// string, e.g. an error message that quoted a header.
const SECRET_IN_TEXT = /lak_[0-9a-f]{16}_[A-Za-z0-9_-]+|\b(Basic|Bearer) +[A-Za-z0-9+/=._~-]+/gi;
const CENSOR = '[redacted]';

/** Replaces API keys and Authorization credentials inside free text. */
export function scrubSecrets(text: string): string {
  return text.replace(SECRET_IN_TEXT, (_match, scheme: string | undefined) => (scheme ? `${scheme} ${CENSOR}` : CENSOR));
}

/**
 * A request path as it may be logged: secrets scrubbed in the path as sent
 * and in its percent-decoded form (`/api/methods/lak%5F…/` hides a key from
 * a scrubber that only reads the raw text). When only the decoded form shows
 * a secret, the decoded form is logged, scrubbed.
 */
export function scrubPath(path: string): string {
  const scrubbed = scrubSecrets(path);
  if (!path.includes('%')) return scrubbed;
  const decoded = decodeAsciiEscapes(path);
  const decodedScrubbed = scrubSecrets(decoded);
  // The decoding may have made control characters of escapes: escaped again, as the client sent them.
  return decodedScrubbed === decoded ? scrubbed : decodedScrubbed.replace(ASCII_CONTROL_CHARACTERS, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

// Decodes %XX escapes of ASCII characters (what a key, `Basic` or a space is
// made of), repeatedly for double encoding; never throws on bad escapes.
function decodeAsciiEscapes(text: string): string {
  let current = text;
  for (let round = 0; round < 3; round += 1) {
    const next = current.replace(/%([0-7][0-9A-Fa-f])/g, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === current) break;
    current = next;
  }
  return current;
}

/** pino's error serializer, with secrets scrubbed from the message and stack (an error may quote a URL or header). */
function scrubbedError(error: Error): Record<string, unknown> {
  const serialized = pino.stdSerializers.err(error) as unknown as Record<string, unknown>;
  for (const field of ['message', 'stack']) {
    const value = serialized[field];
    if (typeof value === 'string') serialized[field] = scrubSecrets(value);
  }
  return serialized;
}

/**
 * Pino options shared by the server and the CLI: JSON lines, ISO times.
 * Credentials and account numbers are redacted wherever they could appear in
 * a logged object, and API keys are scrubbed from messages too.
 */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-api-key"]',
        'headers.authorization',
        'headers.cookie',
        '*.headers.authorization',
        'authorization',
        '*.authorization',
        'apiKey',
        '*.apiKey',
        'api_key',
        '*.api_key',
        'key',
        '*.key',
        'password',
        '*.password',
        'account_number',
        '*.account_number',
        '*.*.account_number',
      ],
      censor: CENSOR,
    },
    serializers: { err: scrubbedError },
    hooks: {
      logMethod(args, method) {
        method.apply(
          this,
          args.map((arg) => (typeof arg === 'string' ? scrubSecrets(arg) : arg)) as Parameters<typeof method>,
        );
      },
    },
  };
}

/** A pino logger writing JSON lines to `destination` (stdout by default). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}
