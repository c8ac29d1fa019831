import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, type CursorBinding, type CursorPosition } from '../../src/listing/cursor.js';

const secret = randomBytes(32);
const binding: CursorBinding = { orgId: '7', collection: 'methods', filters: ['entity=ent_1'], ordering: '-created_at' };
const at = (rowId: string): CursorPosition => ({ direction: 'after', inclusive: false, sortKey: '2024-05-01T10:00:00.123456Z', rowId });

describe('cursor encryption', () => {
  it('reads back the position it wrote', () => {
    for (const rowId of ['1', '42', '9223372036854775807']) {
      for (const position of [at(rowId), { ...at(rowId), direction: 'before' as const, inclusive: true }]) {
        expect(decodeCursor(encodeCursor(position, binding, secret), binding, secret)).toEqual(position);
      }
    }
  });

  it('is as long for the first row of the installation as for its billionth: the length does not follow the shared sequence', () => {
    const lengths = new Set(['1', '99', '123456', '1000000000', '9223372036854775807'].map((rowId) => encodeCursor(at(rowId), binding, secret).length));
    expect(lengths.size).toBe(1);
  });

  it('never writes the same cursor twice, so two positions cannot be compared', () => {
    const cursors = new Set(Array.from({ length: 50 }, () => encodeCursor(at('12345'), binding, secret)));
    expect(cursors.size).toBe(50);
  });

  it('refuses a cursor with any one bit changed', () => {
    const bytes = Buffer.from(encodeCursor(at('12345'), binding, secret), 'base64url');
    for (let i = 0; i < bytes.length; i += 1) {
      const copy = Buffer.from(bytes);
      copy[i] = copy[i]! ^ (1 << (i % 8));
      expect(() => decodeCursor(copy.toString('base64url'), binding, secret), `byte ${i}`).toThrow(/altered or was not issued by this server/);
    }
  });

  it('is URL-safe: nothing in it needs percent-encoding', () => {
    for (let i = 0; i < 50; i += 1) expect(encodeCursor(at(String(i)), binding, secret)).toMatch(/^[A-Za-z0-9_-]+$/);
  });
});
