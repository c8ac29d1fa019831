import { ApiError } from '../domain/errors.js';
import { strictUtf8 } from '../domain/well-formed-text.js';
import { truncate } from '../domain/truncate.js';

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;

/**
 * A JSON body's bytes as text. JSON is UTF-8 (RFC 8259 §8.1): a body
 * declared in another charset is refused (415), and bytes that are not
 * UTF-8 are malformed JSON (400) — never read with replacement characters,
 * which would store something other than what the client sent.
 */
export function decodeJsonBody(contentType: string | undefined, body: Buffer): string {
  const charset = CHARSET.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError('unsupported_media_type', `send the body as UTF-8 JSON (application/json or application/json; charset=utf-8), not charset=${truncate(charset)}`);
  }
  const text = strictUtf8(body);
  if (text === undefined) throw new ApiError('invalid_json', 'the body is not well-formed JSON: it is not valid UTF-8');
  return text;
}
