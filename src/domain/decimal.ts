/**
 * Exact decimal validation on the text of a number, never through a binary
 * float: `0.1 + 0.2` style rounding must not turn an invalid amount into a
 * valid one (or the reverse). Accepts plain decimals and exponent notation
 * (`1e3`, `5E-4`, as JSON encoders write small rates); trailing zeros in the
 * fraction are insignificant (`12.500` is `12.5`).
 */
export interface DecimalRules {
  /** Digits allowed before the point (NUMERIC(p, s) allows p − s). */
  readonly maxIntegerDigits: number;
  readonly maxFractionDigits: number;
  /** Whether zero is allowed; negative values never are. */
  readonly allowZero: boolean;
}

export type DecimalParseResult = { ok: true; value: string } | { ok: false; reason: string };

export const DECIMAL_PATTERN = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d{1,4}))?$/;

/** Parses decimal text into its canonical form (`1200`, `0.0005`, `12.5`). */
export function parseDecimal(text: string, rules: DecimalRules): DecimalParseResult {
  const match = DECIMAL_PATTERN.exec(text);
  if (!match) return { ok: false, reason: 'must be a decimal number such as 1200.50' };
  const [, sign, integerDigits = '', fractionDigits = '', exponentText] = match;
  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  const digits = integerDigits + fractionDigits;
  const point = integerDigits.length + exponent;
  const padded = point <= 0 ? '0'.repeat(1 - point) + digits : digits.padEnd(point, '0');
  const pointAt = Math.max(point, 1);
  const integer = padded.slice(0, pointAt).replace(/^0+(?=\d)/, '');
  const fraction = padded.slice(pointAt).replace(/0+$/, '');
  const isZero = /^0*$/.test(integer + fraction);
  const positiveWord = rules.allowZero ? 'must not be negative' : 'must be greater than 0';
  if (sign === '-' && !isZero) return { ok: false, reason: positiveWord };
  if (isZero && !rules.allowZero) return { ok: false, reason: positiveWord };
  if (fraction.length > rules.maxFractionDigits) {
    return { ok: false, reason: `must have at most ${rules.maxFractionDigits} decimal places` };
  }
  if (integer.length > rules.maxIntegerDigits) {
    return { ok: false, reason: `must be less than 1${'0'.repeat(rules.maxIntegerDigits)}` };
  }
  return { ok: true, value: fraction ? `${integer}.${fraction}` : integer };
}
