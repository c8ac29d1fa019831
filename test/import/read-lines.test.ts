import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readLines } from '../../src/import/read-lines.js';

async function collect(chunks: Buffer[], max = 1000) {
  const lines: { number: number; text: string; tooLong: boolean }[] = [];
  async function* source() {
    yield* chunks;
  }
  for await (const line of readLines(source(), max)) lines.push({ number: line.number, text: line.text, tooLong: line.tooLong });
  return lines;
}

describe('readLines', () => {
  it('yields the same lines however the bytes are split into chunks', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => s.replace(/[\r\n]/g, '')), { maxLength: 20 }),
        fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 10 }),
        fc.boolean(),
        async (texts, cuts, crlf) => {
          const bytes = Buffer.from(texts.map((t) => t + (crlf ? '\r\n' : '\n')).join(''));
          const chunks: Buffer[] = [];
          let at = 0;
          for (let i = 0; at < bytes.length; i += 1) {
            const size = cuts[i % cuts.length] ?? 1;
            chunks.push(bytes.subarray(at, at + size));
            at += size;
          }
          const lines = await collect(chunks);
          expect(lines.map((l) => l.text)).toEqual(texts);
          expect(lines.map((l) => l.number)).toEqual(texts.map((_, i) => i + 1));
        },
      ),
    );
  });

  it('reads a last line without a newline and drops a byte order mark', async () => {
    expect(await collect([Buffer.from('\ufeff{"a":1}\n{"b":2}')])).toEqual([
      { number: 1, text: '{"a":1}', tooLong: false },
      { number: 2, text: '{"b":2}', tooLong: false },
    ]);
  });

  it('skips an over-long line across chunks and resumes on the next', async () => {
    const long = 'x'.repeat(50);
    const lines = await collect([Buffer.from(`ok\n${long.slice(0, 20)}`), Buffer.from(long.slice(20)), Buffer.from('\nnext\n')], 10);
    expect(lines).toEqual([
      { number: 1, text: 'ok', tooLong: false },
      { number: 2, text: '', tooLong: true },
      { number: 3, text: 'next', tooLong: false },
    ]);
  });
});
