import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatMicros, parseTimestamp } from '../../src/domain/timestamp.js';

function micros(input: string, bound: 'from' | 'to' = 'from'): string {
  const parsed = parseTimestamp(input, bound);
  if (!parsed.ok) throw new Error(`${input}: ${parsed.reason}`);
  return formatMicros(parsed.micros);
}

describe('parseTimestamp', () => {
  it('keeps six fractional digits exactly', () => {
    expect(micros('2024-05-01T10:00:00.123456Z')).toBe('2024-05-01T10:00:00.123456Z');
  });

  it('pads fewer fractional digits and a missing fraction', () => {
    expect(micros('2024-05-01T10:00:00.1Z')).toBe('2024-05-01T10:00:00.100000Z');
    expect(micros('2024-05-01T10:00:00Z')).toBe('2024-05-01T10:00:00.000000Z');
    expect(micros('2024-05-01T10:00Z')).toBe('2024-05-01T10:00:00.000000Z');
  });

  it('rounds a from bound up and a to bound down beyond microseconds', () => {
    expect(micros('2024-05-01T10:00:00.123456001Z', 'from')).toBe('2024-05-01T10:00:00.123457Z');
    expect(micros('2024-05-01T10:00:00.123456999Z', 'to')).toBe('2024-05-01T10:00:00.123456Z');
    expect(micros('2024-05-01T10:00:00.123456000Z', 'from')).toBe('2024-05-01T10:00:00.123456Z');
    expect(micros('2024-12-31T23:59:59.999999001Z', 'from')).toBe('2025-01-01T00:00:00.000000Z');
  });

  it('reads a date alone as the whole UTC day', () => {
    expect(micros('2024-05-01', 'from')).toBe('2024-05-01T00:00:00.000000Z');
    expect(micros('2024-05-01', 'to')).toBe('2024-05-01T23:59:59.999999Z');
    expect(micros('2024-02-29', 'to')).toBe('2024-02-29T23:59:59.999999Z');
  });

  it('converts offsets to UTC, and reads a space as a plus sign', () => {
    expect(micros('2024-05-01T12:30:00.5+02:30')).toBe('2024-05-01T10:00:00.500000Z');
    expect(micros('2024-05-01T12:30:00.5 02:30')).toBe('2024-05-01T10:00:00.500000Z');
    expect(micros('2024-05-01T00:30:00-01:00')).toBe('2024-05-01T01:30:00.000000Z');
    expect(micros('2024-05-01T00:30:00+0100')).toBe('2024-04-30T23:30:00.000000Z');
    expect(micros('2024-05-01T00:30:00+01')).toBe('2024-04-30T23:30:00.000000Z');
  });

  it('reads a time with no offset as UTC, with T, t or a space', () => {
    expect(micros('2024-05-01T10:00:00')).toBe('2024-05-01T10:00:00.000000Z');
    expect(micros('2024-05-01t10:00:00z')).toBe('2024-05-01T10:00:00.000000Z');
    expect(micros('2024-05-01 10:00:00.25')).toBe('2024-05-01T10:00:00.250000Z');
  });

  it('handles years before 1970 and before 100 exactly', () => {
    expect(micros('1969-12-31T23:59:59.999999Z')).toBe('1969-12-31T23:59:59.999999Z');
    expect(micros('0001-01-01T00:00:00Z')).toBe('0001-01-01T00:00:00.000000Z');
    expect(micros('0099-03-01')).toBe('0099-03-01T00:00:00.000000Z');
  });

  it.each([
    ['yesterday', 'ISO 8601'],
    ['2024-13-01', 'calendar date'],
    ['2023-02-29', 'calendar date'],
    ['2024-05-01T24:00:00Z', 'time of day'],
    ['2024-05-01T10:60:00Z', 'time of day'],
    ['2024-05-01T10:00:00+24:00', 'UTC offset'],
    ['2024-05-01T10:00:00.1234567890Z', 'ISO 8601'],
    ['0000-01-01', 'calendar date'],
    ['9999-12-31T23:59:59-01:00', 'years'],
    ['2024-05-01T10:00:00ZZ', 'ISO 8601'],
    ['', 'ISO 8601'],
  ])('rejects %j', (input, reason) => {
    const parsed = parseTimestamp(input, 'from');
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toContain(reason);
  });

  it('agrees with Date for any millisecond instant and offset', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('0100-01-01T00:00:00Z'), max: new Date('9998-12-31T00:00:00Z'), noInvalidDate: true }),
        fc.integer({ min: 0, max: 999 }),
        fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
        (date, extraMicros, offsetMinutes) => {
          const local = new Date(date.getTime() + offsetMinutes * 60_000).toISOString().slice(0, 23);
          const sign = offsetMinutes < 0 ? '-' : '+';
          const abs = Math.abs(offsetMinutes);
          const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
          const text = `${local}${String(extraMicros).padStart(3, '0')}${offset}`;
          const expected = `${date.toISOString().slice(0, 23)}${String(extraMicros).padStart(3, '0')}Z`;
          expect(micros(text)).toBe(expected);
        },
      ),
    );
  });

  it('round-trips every formatted instant through parse', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -62_135_596_800_000_000n, max: 253_402_300_799_999_999n }), (value) => {
        const text = formatMicros(value);
        const from = parseTimestamp(text, 'from');
        const to = parseTimestamp(text, 'to');
        expect(from.ok && from.micros).toBe(value);
        expect(to.ok && to.micros).toBe(value);
      }),
    );
  });
});
