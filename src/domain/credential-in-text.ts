import { decodeAsciiEscapes, looksLikeApiKey } from './key-shaped-text.js';

/** What a refusal names, so a client sees why its value was taken for a credential (no `lak_`: a detail showing it is redacted). */
export const CREDENTIAL_FORMS =
  "an API key, this request's key or its secret part, base64 or base64url of the key or of org:key, an Authorization value, in any letter case or spacing";

/** The credentials a request authenticated with: its Basic `Authorization`, or a portal session's Bearer (`apiKey`: `lps_…`, no organization). */
export interface PresentedCredential {
  readonly organizationId: string;
  readonly apiKey: string;
}

/**
 * Whether a text a client wants stored (an Idempotency-Key, a reference, a
 * description, a webhook URL) carries a credential: something key-shaped
 * (looksLikeApiKey), plainly or base64-encoded, or the request's own key in
 * any form a client could paste by mistake — the key, its secret part, base64
 * or base64url of the key or of `org:key` (an `Authorization` value), or hex —
 * whatever its letter case, spacing or percent-encoding.
 *
 * Every such form contains the secret part, or its encoding: base64 of a text
 * holding the secret holds, depending on where the secret starts modulo 3, one
 * of three runs that only the secret's own bytes decide (secretCores). So the
 * text is searched for the secret and those runs, never decoded by guessing.
 */
export function holdsCredential(text: string, presented?: PresentedCredential): boolean {
  if (looksLikeApiKey(text)) return true;
  const folded = foldForSearch(text);
  if (hasBase64EncodedKeyShape(folded)) return true;
  // Every form holds at least the secret's 43 characters: a shorter text (a UUID) holds none.
  if (presented === undefined || folded.length < SECRET_LENGTH) return false;
  const secret = secretOf(presented.apiKey);
  if (secret === undefined) return false;
  const lower = folded.toLowerCase();
  return needlesOf(secret).some((needle) => lower.includes(needle));
}

/** The text percent-decoded and without whitespace: `Basic  bGFr…`, `lak_ 0123…` or `%6C%61%6B…` hide nothing. */
function foldForSearch(text: string): string {
  return decodeAsciiEscapes(text).replace(/\s+/g, '');
}

// A key is `lak_<16 hex>_<43 base64url>` (auth/api-key-format.ts); the secret part is the credential.
// A portal session's secret is `lps_<43 base64url>` (auth/portal-secrets.ts), held the same way.
const SECRET_LENGTH = 43;
const SECRET_OF_KEY = /^(?:lak_[0-9a-f]{16}|lps)_([A-Za-z0-9_-]{43})$/i;

function secretOf(apiKey: string): string | undefined {
  return SECRET_OF_KEY.exec(apiKey)?.[1];
}

/** Lower-case runs whose presence in a (folded, lower-cased) text means it carries `secret`. */
function needlesOf(secret: string): string[] {
  const bytes = Buffer.from(secret, 'latin1');
  const needles = new Set<string>([secret.toLowerCase(), bytes.toString('hex')]);
  for (const core of secretCores(bytes)) {
    needles.add(core.toLowerCase());
    needles.add(core.replace(/\+/g, '-').replace(/\//g, '_').toLowerCase());
  }
  return [...needles];
}

/**
 * For each of the three positions the secret can start at in base64's 3-byte
 * groups, the base64 characters whose 6 bits all come from the secret: what
 * base64 of ANY text holding the secret at such a position contains, whatever
 * surrounds it (`org:`, a prefix, a suffix).
 */
export function secretCores(secret: Buffer): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset += 1) {
    const encoded = Buffer.concat([Buffer.alloc(offset), secret]).toString('base64').replace(/=+$/, '');
    const firstBit = offset * 8;
    const endBit = (offset + secret.length) * 8;
    const first = Math.ceil(firstBit / 6);
    const end = Math.floor(endBit / 6);
    cores.push(encoded.slice(first, end));
  }
  return cores;
}

const BASE64_RUN = /[A-Za-z0-9+/_-]{24,}/g;
const KEY_SHAPE_IN_BYTES = /lak_|[0-9a-f]{16}_[A-Za-z0-9_-]{43}/i;

/**
 * Whether a run of base64 or base64url characters in the text decodes, at any
 * of its four alignments, to something key-shaped: base64 of another key, or
 * of `org:lak_…`. Decoded bytes of an unrelated value are noise, in which
 * `lak_` (4 given bytes) or a whole key's shape turns up by chance too rarely to matter.
 */
function hasBase64EncodedKeyShape(folded: string): boolean {
  for (const [run] of folded.matchAll(BASE64_RUN)) {
    for (let offset = 0; offset < 4; offset += 1) {
      if (KEY_SHAPE_IN_BYTES.test(Buffer.from(run.slice(offset), 'base64').toString('latin1'))) return true;
    }
  }
  return false;
}
