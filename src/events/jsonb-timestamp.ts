import { formatMicros } from '../domain/timestamp.js';

// What to_jsonb writes for a timestamptz: `2026-11-28T03:13:08.664+00:00`, its fraction's trailing zeros
// trimmed (none at all on a whole second), the offset of the session's time zone (seconds only for
// historical local mean times).
const UTC_JSONB_TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(?:Z|\+00(?::00(?::00)?)?)$/;
const JSONB_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?:Z|([+-])(\d{2})(?::(\d{2})(?::(\d{2}))?)?)$/;

/**
 * A timestamp as to_jsonb renders it, as the API writes every timestamp:
 * UTC with six fractional digits (`2026-11-28T03:13:08.664000Z`). Exact:
 * whole seconds are computed as integers and the microseconds kept apart.
 * Throws on any other text (a value no timestamptz column holds).
 */
export function apiTimestampOfJsonb(text: string): string {
  // Written by a session in UTC (the TimeZone of most servers): the text is the instant already, its fraction to pad.
  const utc = UTC_JSONB_TIMESTAMP.exec(text);
  if (utc) return `${utc[1]}.${(utc[2] ?? '').padEnd(6, '0')}Z`;
  const match = JSONB_TIMESTAMP.exec(text);
  if (!match) throw new Error(`not a timestamp as to_jsonb writes one: ${text.slice(0, 40)}`);
  const [, year, month, day, hour, minute, second, fraction = '', sign, offsetHours = '0', offsetMinutes = '0', offsetSeconds = '0'] = match;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0–99 as 1900–1999.
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  date.setUTCHours(Number(hour), Number(minute), Number(second), 0);
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 3600 + Number(offsetMinutes) * 60 + Number(offsetSeconds));
  const utcSeconds = date.getTime() / 1000 - offset;
  return formatMicros(BigInt(utcSeconds) * 1_000_000n + BigInt(fraction.padEnd(6, '0')));
}
