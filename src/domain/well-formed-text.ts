/* eslint-disable no-control-regex -- matching control characters is the point */
/** C0 controls and DEL: what ASCII text may not hold. */
export const ASCII_CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;
/** The same and the C1 controls (U+0080–U+009F), which a terminal obeys too. */
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/g;
/* eslint-enable no-control-regex */

/**
 * Half of a UTF-16 surrogate pair on its own (JSON's `"\ud800"`): no
 * character, and not storable as UTF-8 (it would be stored as U+FFFD).
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * `bytes` as text, or undefined when they are not valid UTF-8. Node's own
 * decoding would put U+FFFD in place of each bad sequence, silently; the
 * strict decoder runs only when that character shows up.
 */
export function strictUtf8(bytes: Buffer): string | undefined {
  const text = bytes.toString('utf8');
  if (!text.includes('\ufffd')) return text;
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}
