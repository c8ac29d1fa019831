import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAmount } from '../../src/domain/amount.js';
import { parseDecimal } from '../../src/domain/decimal.js';

const RULES = { maxIntegerDigits: 13, maxFractionDigits: 2, allowZero: false };
const digits = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });

/** Exact reference: the value in hundredths as a BigInt, or undefined when it is not a whole number of hundredths. */
function hundredths(integer: string, fraction: string, exponent: number): bigint | undefined {
  const value = BigInt(integer + fraction);
  const shift = fraction.length - exponent - 2;
  if (shift <= 0) return value * 10n ** BigInt(-shift);
  const unit = 10n ** BigInt(shift);
  return value % unit === 0n ? value / unit : undefined;
}

describe('parseDecimal', () => {
  it('accepts exactly the decimals that are whole hundredths, positive and below 10^13', () => {
    fc.assert(
      fc.property(digits(1, 16), fc.option(digits(1, 6), { nil: undefined }), fc.option(fc.integer({ min: -6, max: 6 }), { nil: undefined }), (integer, fraction, exponent) => {
        const text = `${integer}${fraction === undefined ? '' : `.${fraction}`}${exponent === undefined ? '' : `e${exponent}`}`;
        const expected = hundredths(integer, fraction ?? '', exponent ?? 0);
        const result = parseDecimal(text, RULES);
        const valid = expected !== undefined && expected > 0n && expected < 10n ** 15n;
        expect(result.ok, text).toBe(valid);
        if (result.ok && expected !== undefined) {
          const [i, f = ''] = result.value.split('.');
          expect(BigInt(`${i}${f.padEnd(2, '0')}`), text).toBe(expected);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('never passes text through a binary float', () => {
    expect(parseDecimal('0.30000000000000000001', RULES).ok).toBe(false);
    expect(parseDecimal('9999999999999.99', RULES)).toEqual({ ok: true, value: '9999999999999.99' });
    expect(parseDecimal('12.500', RULES)).toEqual({ ok: true, value: '12.5' });
    expect(parseDecimal('5E-4', { maxIntegerDigits: 2, maxFractionDigits: 8, allowZero: true })).toEqual({ ok: true, value: '0.0005' });
  });

  it('rejects signs, spaces and other text', () => {
    for (const text of ['-1', '+1', ' 1', '1 ', '1.', '.5', '1,5', '0x10', 'NaN', 'Infinity', '']) {
      expect(parseDecimal(text, RULES).ok, text).toBe(false);
    }
  });

  it('writes amounts with exactly two decimal places', () => {
    expect(parseAmount('1200')).toEqual({ ok: true, value: '1200.00' });
    expect(parseAmount('0.5')).toEqual({ ok: true, value: '0.50' });
  });
});
