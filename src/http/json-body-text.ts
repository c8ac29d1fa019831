import { ApiError } from '../domain/errors.js';
import { strictUtf8 } from '../domain/well-formed-text.js';
import { truncate } from '../domain/truncate.js';

// One `; name=value` parameter of a media type (RFC 9110 §5.6.6): a token, or a quoted string that may hold a `;`.
const PARAMETER = /;[ \t]*([^\s;=]+)[ \t]*=[ \t]*("(?:[^"\\]|\\.)*"|[^;]*)/g;

/**
 * A JSON body's bytes as text. JSON is UTF-8 (RFC 8259 §8.1): a body
 * declared in another charset is refused (415), and bytes that are not
 * UTF-8 are malformed JSON (400) — never read with replacement characters,
 * which would store something other than what the client sent. A
 * Content-Type that gives a parameter twice (`charset=UTF-8; charset=latin1`)
 * is refused too (415): readers disagree on which one counts.
 */
export function decodeJsonBody(contentType: string | undefined, body: Buffer): string {
  const charset = charsetOf(contentType ?? '');
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError('unsupported_media_type', `send the body as UTF-8 JSON (application/json or application/json; charset=utf-8), not charset=${truncate(charset)}`);
  }
  const text = strictUtf8(body);
  if (text === undefined) throw new ApiError('invalid_json', 'the body is not well-formed JSON: it is not valid UTF-8');
  return text;
}

/** The media type's charset, lower-cased and unquoted; a 415 when a parameter is given twice. */
function charsetOf(contentType: string): string | undefined {
  const seen = new Set<string>();
  let charset: string | undefined;
  for (const [, rawName = '', rawValue = ''] of contentType.matchAll(PARAMETER)) {
    const name = rawName.toLowerCase();
    if (seen.has(name)) {
      throw new ApiError('unsupported_media_type', `send a Content-Type that gives each parameter once: this one gives ${truncate(name)} twice`);
    }
    seen.add(name);
    if (name === 'charset') charset = rawValue.trim().replace(/^"(.*)"$/, '$1').toLowerCase();
  }
  return charset;
}
