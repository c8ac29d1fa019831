import { ASCII_CONTROL_CHARACTERS } from './well-formed-text.js';

/**
 * Key-shaped: an API key's `lak_` prefix (any letter case, whatever follows
 * it), or a key's id and secret without it (see auth/api-key-format.ts), or
 * a portal link's token or session secret (`lpt_`/`lps_` and 43 characters:
 * auth/portal-secrets.ts).
 * A client that pastes its key into the wrong place (a header, a URL, a
 * body member) must not find it kept or echoed; a false positive costs only
 * a value that merely looks like a key.
 */
const KEY_SHAPED = /lak_[A-Za-z0-9_-]*|[0-9a-f]{16}_[A-Za-z0-9_-]{43}|lp[st]_[A-Za-z0-9_-]{43}/gi;
export const REDACTED = '[redacted]';

/** Whether a text carries something key-shaped (see KEY_SHAPED), as sent or once percent-decoded. */
export function looksLikeApiKey(text: string): boolean {
  return hasKeyShape(text) || (text.includes('%') && hasKeyShape(decodeAsciiEscapes(text)));
}

/**
 * The text with every key-shaped part replaced by `[redacted]`. A key
 * hidden by percent-encoding (`lak%5F…`, or encoded twice) is found too:
 * then the decoded text is returned, redacted, with any control characters
 * the decoding made escaped again as the client sent them.
 */
export function redactApiKeys(text: string): string {
  const redacted = text.replace(KEY_SHAPED, REDACTED);
  if (!text.includes('%')) return redacted;
  const decoded = decodeAsciiEscapes(text);
  if (!hasKeyShape(decoded)) return redacted;
  return escapeAsciiControls(decoded.replace(KEY_SHAPED, REDACTED));
}

/** Control characters that percent-decoding made of escapes, escaped again as the client sent them. */
export function escapeAsciiControls(text: string): string {
  return text.replace(ASCII_CONTROL_CHARACTERS, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

function hasKeyShape(text: string): boolean {
  KEY_SHAPED.lastIndex = 0;
  return KEY_SHAPED.test(text);
}

/** Decodes %XX escapes of ASCII characters (what a key, `Basic` or a space is made of), repeatedly for double encoding; never throws on bad escapes. */
export function decodeAsciiEscapes(text: string): string {
  let current = text;
  for (let round = 0; round < 3; round += 1) {
    const next = current.replace(/%([0-7][0-9A-Fa-f])/g, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === current) break;
    current = next;
  }
  return current;
}
