import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

// An API key (`lak_<id>_<secret>`) or Basic credentials inside any logged
// string, e.g. an error message that quoted a header.
const SECRET_IN_TEXT = /lak_[0-9a-f]{16}_[A-Za-z0-9_-]+|\b(Basic|Bearer) +[A-Za-z0-9+/=._~-]+/gi;
const CENSOR = '[redacted]';

/** Replaces API keys and Authorization credentials inside free text. */
export function scrubSecrets(text: string): string {
  return text.replace(SECRET_IN_TEXT, (_match, scheme: string | undefined) => (scheme ? `${scheme} ${CENSOR}` : CENSOR));
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
