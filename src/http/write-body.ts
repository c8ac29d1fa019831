import { isLosslessNumber, parse as parseLossless } from 'lossless-json';
import { ApiError, type ParamError } from '../domain/errors.js';
import { CONTROL_CHARACTERS, hasLoneSurrogate } from '../domain/well-formed-text.js';
import { parseAmount } from '../domain/amount.js';
import { CREDENTIAL_FORMS, holdsCredential, type PresentedCredential } from '../domain/credential-in-text.js';
import { MAX_REFERENCE_LENGTH } from '../ledger/write-limits.js';
import { formatMicros, parseTimestamp } from '../domain/timestamp.js';
import { firstRepeatedMember } from './json-repeated-member.js';

/** A drawdown or repayment body, validated and in canonical form. */
export interface WriteBody {
  /** Canonical amount with two decimals (`1200.00`). */
  readonly amount: string;
  /** The entry's time, canonical (`2024-05-01T10:00:00.000000Z`); absent means now. */
  readonly at?: string;
  readonly reference?: string;
}

export const WRITE_BODY_MEMBERS = ['amount', 'at', 'reference'] as const;

// A date, a time and an offset (RFC 3339): a bare date or a time without an offset is ambiguous for an entry.
const DATE_TIME_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})$/;

/**
 * Parses and validates the JSON body of a drawdown or repayment. Malformed
 * JSON, or a member given twice, is a 400 `invalid_json`; anything else wrong is one 422 `invalid_body`
 * naming every invalid member. A JSON number amount is read from its source
 * text, never through a binary float (same rule as the import). A
 * reference holding a credential (`presented`: the request's own) is refused.
 */
export function parseWriteBody(raw: string | undefined, presented?: PresentedCredential, nowMs: number = Date.now()): WriteBody {
  const body = parseBodyObject(raw, 'amount', '{"amount": "1200.00"}');
  const errors: ParamError[] = refuseUnknownMembers(body, WRITE_BODY_MEMBERS);
  const amount = amountOf(body.amount, errors);
  const at = atOf(body.at, nowMs, errors);
  const reference = referenceOf(body.reference, errors, presented);
  if (errors.length > 0 || amount === undefined) throw ApiError.invalidBody(errors);
  return { amount, ...(at === undefined ? {} : { at }), ...(reference === undefined ? {} : { reference }) };
}

/**
 * A write's body as a JSON object whose numbers keep their source text
 * (lossless). Empty: a 422 naming `required`; malformed, or a member given
 * twice: a 400 invalid_json;
 * not an object: a 422 showing `example`.
 */
export function parseBodyObject(raw: string | undefined, required: string, example: string): Record<string, unknown> {
  const text = raw ?? '';
  if (text.trim() === '') throw ApiError.invalidBody([{ param: required, detail: `${required} is required (the body is empty)` }]);
  try {
    JSON.parse(text);
  } catch (error) {
    throw new ApiError('invalid_json', `the body is not well-formed JSON: ${jsonErrorReason(error)}`);
  }
  const repeated = firstRepeatedMember(text);
  if (repeated) {
    throw new ApiError('invalid_json', `the body gives the member ${quote(repeated.name)} twice (again at character ${repeated.position + 1}); send each member once`);
  }
  // Well-formed, each member once: the lossless reading accepts it.
  const exact: unknown = parseLossless(text);
  if (typeof exact !== 'object' || exact === null || Array.isArray(exact)) {
    throw ApiError.invalidBody([{ param: 'body', detail: `the body must be a JSON object such as ${example}` }]);
  }
  return exact as Record<string, unknown>;
}

/** One error per member the body does not accept. */
export function refuseUnknownMembers(body: Record<string, unknown>, accepted: readonly string[]): ParamError[] {
  return Object.keys(body)
    .filter((member) => !accepted.includes(member))
    .map((member) => ({
      param: member,
      detail: `${quote(member)} is not a member of this body; ${accepted.length === 0 ? 'it takes none (send {} or nothing)' : `it accepts ${accepted.join(', ')}`}`,
    }));
}

/** A required amount (`name`: amount, principal) in canonical form, or an error pushed naming it. */
export function amountOf(value: unknown, errors: ParamError[], name = 'amount'): string | undefined {
  if (value === undefined) {
    errors.push({ param: name, detail: `${name} is required` });
    return undefined;
  }
  const text = isLosslessNumber(value) ? value.value : typeof value === 'string' ? value : undefined;
  if (text === undefined) {
    errors.push({ param: name, detail: `${name} must be a decimal number or string such as "1200.50", got ${typeName(value)}` });
    return undefined;
  }
  const parsed = parseAmount(text);
  if (!parsed.ok) {
    errors.push({ param: name, detail: `${name} ${parsed.reason}, got ${quote(text)}` });
    return undefined;
  }
  return parsed.value;
}

function atOf(value: unknown, nowMs: number, errors: ParamError[]): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    errors.push({ param: 'at', detail: `at must be an RFC 3339 timestamp string, got ${typeName(value)}` });
    return undefined;
  }
  const parsed = DATE_TIME_WITH_OFFSET.test(value) ? parseTimestamp(value, 'from') : undefined;
  if (!parsed?.ok) {
    errors.push({ param: 'at', detail: `at must be an RFC 3339 timestamp with an offset, such as 2024-05-01T10:00:00Z, got ${quote(value)}` });
    return undefined;
  }
  if (parsed.micros > BigInt(nowMs) * 1000n) {
    errors.push({ param: 'at', detail: `at ${quote(value)} is in the future; an entry may be dated now or earlier` });
    return undefined;
  }
  return formatMicros(parsed.micros);
}

export function referenceOf(value: unknown, errors: ParamError[], presented?: PresentedCredential): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    errors.push({ param: 'reference', detail: `reference must be a string, got ${typeName(value)}` });
    return undefined;
  }
  const length = [...value].length;
  if (length < 1 || length > MAX_REFERENCE_LENGTH) {
    errors.push({ param: 'reference', detail: `reference must be 1–${MAX_REFERENCE_LENGTH} characters, got ${length}` });
    return undefined;
  }
  if (value.search(CONTROL_CHARACTERS) !== -1) {
    errors.push({ param: 'reference', detail: 'reference must not contain control characters' });
    return undefined;
  }
  if (hasLoneSurrogate(value)) {
    errors.push({ param: 'reference', detail: 'reference must be well-formed Unicode: it holds half of a surrogate pair (\\ud800–\\udfff) on its own' });
    return undefined;
  }
  // A reference is stored, shown in every answer about the entry and sent in its events: never a credential pasted into it.
  if (holdsCredential(value, presented)) {
    errors.push({ param: 'reference', detail: `reference looks like an API key or holds one (${CREDENTIAL_FORMS}); it is kept and shown with the entry, so it must not hold a credential` });
    return undefined;
  }
  return value;
}

export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (isLosslessNumber(value)) return 'a number';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Quotes input for an error message, shortened: a detail must stay readable. */
function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

function jsonErrorReason(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const position = /position (\d+)/.exec(message)?.[1];
  return position === undefined ? 'check its syntax' : `syntax error at character ${Number(position) + 1}`;
}
