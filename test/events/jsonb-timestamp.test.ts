import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { apiTimestampOfJsonb } from '../../src/events/jsonb-timestamp.js';
import { openPgliteTestStore } from '../helpers/stores.js';

describe('apiTimestampOfJsonb: to_jsonb timestamps as the API writes them', () => {
  it('pads a trimmed fraction to six digits and writes UTC with Z', () => {
    expect(apiTimestampOfJsonb('2026-11-28T03:13:08.664+00:00')).toBe('2026-11-28T03:13:08.664000Z');
    expect(apiTimestampOfJsonb('2026-11-28T03:13:08.000001+00:00')).toBe('2026-11-28T03:13:08.000001Z');
    expect(apiTimestampOfJsonb('2026-11-28T03:13:08.123456+00:00')).toBe('2026-11-28T03:13:08.123456Z');
  });

  it('writes .000000 for a whole second, which to_jsonb gives without a fraction', () => {
    expect(apiTimestampOfJsonb('2026-11-28T03:13:08+00:00')).toBe('2026-11-28T03:13:08.000000Z');
  });

  it('moves an offset to UTC exactly, across days, months and years, keeping the microseconds', () => {
    expect(apiTimestampOfJsonb('2026-11-28T03:13:08.5+05:30')).toBe('2026-11-27T21:43:08.500000Z');
    expect(apiTimestampOfJsonb('2024-12-31T22:00:00.999999-02:00')).toBe('2025-01-01T00:00:00.999999Z');
    expect(apiTimestampOfJsonb('2024-03-01T00:30:00+01')).toBe('2024-02-29T23:30:00.000000Z');
    // Local mean time: offsets with seconds.
    expect(apiTimestampOfJsonb('1890-01-01T00:00:00+00:09:21')).toBe('1889-12-31T23:50:39.000000Z');
    expect(apiTimestampOfJsonb('0050-06-01T12:00:00Z')).toBe('0050-06-01T12:00:00.000000Z');
  });

  it('gives the same instant for a UTC text (read as it stands) and the same moment at any other offset', () => {
    const years1000to9999 = fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31) });
    fc.assert(
      fc.property(years1000to9999, fc.integer({ min: 0, max: 999 }), fc.integer({ min: -14 * 60, max: 14 * 60 }), (ms, micros, offsetMinutes) => {
        const sixDigits = `${String(((ms % 1000) + 1000) % 1000).padStart(3, '0')}${String(micros).padStart(3, '0')}`;
        const fraction = sixDigits.replace(/0+$/, '');
        const expected = `${new Date(ms).toISOString().slice(0, 19)}.${sixDigits}Z`;
        const written = (at: number, offset: string) => `${new Date(at).toISOString().slice(0, 19)}${fraction ? `.${fraction}` : ''}${offset}`;
        expect(apiTimestampOfJsonb(written(ms, '+00:00'))).toBe(expected);
        expect(apiTimestampOfJsonb(written(ms, 'Z'))).toBe(expected);
        const sign = offsetMinutes < 0 ? '-' : '+';
        const offset = `${sign}${String(Math.trunc(Math.abs(offsetMinutes) / 60)).padStart(2, '0')}:${String(Math.abs(offsetMinutes) % 60).padStart(2, '0')}`;
        // The wall-clock reading at that offset: what to_jsonb writes in such a time zone.
        const local = ms + offsetMinutes * 60_000;
        fc.pre(new Date(local).getUTCFullYear() >= 1000 && new Date(local).getUTCFullYear() <= 9999);
        expect(apiTimestampOfJsonb(written(local, offset))).toBe(expected);
      }),
    );
  });

  it('refuses text that is not a timestamp as to_jsonb writes one', () => {
    for (const text of ['2026-11-28 03:13:08+00', '2026-11-28T03:13:08.1234567+00:00', 'infinity', '']) {
      expect(() => apiTimestampOfJsonb(text), text).toThrow(/not a timestamp/);
    }
  });

  it('agrees with PostgreSQL on what to_jsonb writes in other time zones', async () => {
    const store = await openPgliteTestStore();
    try {
      for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Chatham']) {
        const [row] = await store.query<{ jsonb: string; api: string }>(
          `SELECT to_jsonb(t.at) #>> '{}' AS jsonb, to_char(t.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS api
             FROM (SELECT set_config('timezone', $1, false), '2024-02-29T23:59:59.12Z'::timestamptz AS at) t`,
          [zone],
        );
        expect(apiTimestampOfJsonb(row!.jsonb), `${zone}: ${row!.jsonb}`).toBe(row!.api);
      }
    } finally {
      await store.close();
    }
  });
});
