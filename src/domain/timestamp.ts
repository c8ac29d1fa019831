/**
 * Timestamps with microsecond precision, the precision PostgreSQL stores.
 * JavaScript's Date only holds milliseconds, so instants are kept as
 * microseconds since the Unix epoch in a bigint and written as canonical
 * RFC 3339 UTC strings with exactly six fractional digits.
 */

const MICROS_PER_SECOND = 1_000_000n;
const MICROS_PER_DAY = 86_400n * MICROS_PER_SECOND;

// date, then optionally [T|t|space] time[.fraction] and an offset. A `+` that
// arrived unencoded in a query string becomes a space, so a space is also
// accepted as the sign of a positive offset.
/** The longest text TIMESTAMP_PATTERN matches: `2024-05-01T10:00:00.123456789+05:30`. */
export const MAX_TIMESTAMP_TEXT_LENGTH = 35;
export const TIMESTAMP_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+\- ])(\d{2})(?::?(\d{2}))?)?)?$/;

export type Bound = 'from' | 'to';

export type TimestampParseResult = { ok: true; micros: bigint } | { ok: false; reason: string };

/**
 * Parses an ISO 8601 / RFC 3339 timestamp or a bare date into epoch
 * microseconds. A `from` bound rounds sub-microsecond digits up and a bare
 * date to its first microsecond; a `to` bound rounds down and a bare date to
 * its last microsecond, so both ends of a range stay inclusive and exact.
 */
export function parseTimestamp(input: string, bound: Bound): TimestampParseResult {
  const match = TIMESTAMP_PATTERN.exec(input);
  if (!match) return { ok: false, reason: 'must be an ISO 8601 timestamp such as 2024-05-01T10:00:00.123456Z or a date such as 2024-05-01' };
  const [, y, mo, d, h, mi, s, fraction, zulu, sign, offH, offM] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) {
    return { ok: false, reason: 'must be a valid calendar date' };
  }
  const dayStart = BigInt(daysFromCivil(year, month, day)) * MICROS_PER_DAY;
  if (h === undefined) {
    return { ok: true, micros: bound === 'from' ? dayStart : dayStart + MICROS_PER_DAY - 1n };
  }
  const hour = Number(h);
  const minute = Number(mi);
  const second = s === undefined ? 0 : Number(s);
  if (hour > 23 || minute > 59 || second > 59) return { ok: false, reason: 'must have a time of day between 00:00:00 and 23:59:59' };
  let offsetMinutes = 0;
  if (sign !== undefined && zulu === undefined) {
    const oh = Number(offH);
    const om = offM === undefined ? 0 : Number(offM);
    if (oh > 23 || om > 59) return { ok: false, reason: 'must have a UTC offset between -23:59 and +23:59' };
    offsetMinutes = (sign === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const digits = (fraction ?? '').padEnd(9, '0');
  let micros = BigInt(digits.slice(0, 6));
  const beyondMicros = digits.slice(6) !== '000';
  if (beyondMicros && bound === 'from') micros += 1n;
  const total =
    dayStart +
    BigInt(hour * 3600 + minute * 60 + second - offsetMinutes * 60) * MICROS_PER_SECOND +
    micros;
  if (total < MIN_MICROS || total > MAX_MICROS) return { ok: false, reason: 'must be between the years 0001 and 9999' };
  return { ok: true, micros: total };
}

/** Formats epoch microseconds as `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
export function formatMicros(micros: bigint): string {
  const days = floorDiv(micros, MICROS_PER_DAY);
  const inDay = micros - days * MICROS_PER_DAY;
  const [year, month, day] = civilFromDays(Number(days));
  const seconds = Number(inDay / MICROS_PER_SECOND);
  const fraction = inDay % MICROS_PER_SECOND;
  return (
    `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T` +
    `${pad(Math.floor(seconds / 3600), 2)}:${pad(Math.floor(seconds / 60) % 60, 2)}:${pad(seconds % 60, 2)}.` +
    `${fraction.toString().padStart(6, '0')}Z`
  );
}

/** The current time in epoch microseconds (millisecond resolution). */
export function nowMicros(): bigint {
  return BigInt(Date.now()) * 1000n;
}

const MIN_MICROS = BigInt(daysFromCivil(1, 1, 1)) * MICROS_PER_DAY;
const MAX_MICROS = BigInt(daysFromCivil(10000, 1, 1)) * MICROS_PER_DAY - 1n;

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  return [31, isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
}

// Howard Hinnant's days_from_civil / civil_from_days: exact proleptic
// Gregorian arithmetic for any year, which Date.UTC does not give for years < 100.
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(days: number): [number, number, number] {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return [month <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, month, day];
}
