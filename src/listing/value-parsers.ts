import { Type } from '@sinclair/typebox';
import { isActiveCurrency } from '../domain/currencies.js';
import type { ValueParser } from './resource-definition.js';
import { formatMicros, MAX_TIMESTAMP_TEXT_LENGTH, parseTimestamp, TIMESTAMP_PATTERN, type Bound } from '../domain/timestamp.js';
import { asciiUpperCase } from '../domain/ascii-upper-case.js';

const MAX_IDENTIFIER_LENGTH = 255;

function timestampBound(bound: Bound): ValueParser {
  return {
    // No `format: date-time`: a date alone and an offset with a space for `+` are accepted too.
    schema: Type.String({
      minLength: 10,
      maxLength: MAX_TIMESTAMP_TEXT_LENGTH,
      pattern: TIMESTAMP_PATTERN.source,
      description:
        bound === 'from'
          ? 'RFC 3339 timestamp or a date (inclusive lower bound; a date means 00:00:00 UTC)'
          : 'RFC 3339 timestamp or a date (inclusive upper bound; a date means its last microsecond)',
      examples: ['2024-05-01T10:00:00.123456Z', '2024-05-01'],
    }),
    parse(raw) {
      const parsed = parseTimestamp(raw, bound);
      return parsed.ok ? { ok: true, value: formatMicros(parsed.micros) } : parsed;
    },
  };
}

/** Inclusive lower bound of a time range; sub-microsecond digits round up. */
export const timestampFrom = timestampBound('from');
/** Inclusive upper bound of a time range; sub-microsecond digits round down. */
export const timestampTo = timestampBound('to');

/** An exact identifier such as an entity UID. */
export const identifierValue: ValueParser = {
  schema: Type.String({ minLength: 1, maxLength: MAX_IDENTIFIER_LENGTH, examples: ['ent_1'] }),
  parse(raw) {
    if (raw.length === 0) return { ok: false, reason: 'must not be empty' };
    // Characters, as the tables' CHECK and JSON Schema's maxLength count them: a code point outside the BMP is one.
    if (raw.length > MAX_IDENTIFIER_LENGTH && [...raw].length > MAX_IDENTIFIER_LENGTH) return { ok: false, reason: `must be at most ${MAX_IDENTIFIER_LENGTH} characters` };
    // PostgreSQL text cannot hold NUL: the query would fail instead of matching nothing.
    if (raw.includes('\u0000')) return { ok: false, reason: 'must not contain a NUL character' };
    return { ok: true, value: raw };
  },
};

/** An active ISO 4217 code in any letter case, normalized to upper case. */
export const currencyValue: ValueParser = {
  schema: Type.String({ maxLength: 3, pattern: '^[A-Za-z]{3}$', description: 'ISO 4217 code, any letter case', examples: ['USD'] }),
  parse(raw) {
    const code = asciiUpperCase(raw);
    if (!/^[A-Z]{3}$/.test(code)) return { ok: false, reason: 'must be a three-letter ISO 4217 currency code' };
    if (!isActiveCurrency(code)) return { ok: false, reason: 'must be an active ISO 4217 currency code' };
    return { ok: true, value: code };
  },
};

/**
 * One of a field's enum values in any letter case, as the field spells it
 * (`?status=ACTIVE` finds `active`).
 */
export function enumValue(values: readonly string[]): ValueParser {
  const byUpper = new Map(values.map((value) => [asciiUpperCase(value), value]));
  return {
    schema: Type.String({
      minLength: 1,
      maxLength: Math.max(...values.map((value) => value.length)),
      description: `One of ${values.join(', ')} (any letter case)`,
      examples: values.slice(0, 1),
    }),
    parse(raw) {
      const value = byUpper.get(asciiUpperCase(raw));
      return value === undefined ? { ok: false, reason: `must be one of ${values.join(', ')}` } : { ok: true, value };
    },
  };
}
