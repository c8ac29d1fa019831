import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { decodeAsciiEscapes, escapeAsciiControls, REDACTED as CENSOR, redactApiKeys } from './domain/key-shaped-text.js';

// Basic or Bearer credentials inside any logged string, e.g. an error message that quoted a header.
const CREDENTIALS_IN_TEXT = /\b(Basic|Bearer) +[A-Za-z0-9+/=._~-]+/gi;

/** Replaces key-shaped values (the rule answers follow too: redactApiKeys) and Authorization credentials inside free text. */
export function scrubSecrets(text: string): string {
  return redactApiKeys(text.replace(CREDENTIALS_IN_TEXT, (_match, scheme: string) => `${scheme} ${CENSOR}`));
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
  return decodedScrubbed === decoded ? scrubbed : escapeAsciiControls(decodedScrubbed);
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
