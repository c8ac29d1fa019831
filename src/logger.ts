import type { LoggerOptions } from 'pino';

/**
 * Pino options shared by the server and the CLI. Credentials are redacted
 * wherever they could appear in a logged object.
 */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'headers.authorization',
        '*.authorization',
        '*.apiKey',
        '*.api_key',
        '*.key',
        '*.password',
        '*.account_number',
      ],
      censor: '[redacted]',
    },
  };
}
