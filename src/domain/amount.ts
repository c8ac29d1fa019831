import { parseDecimal, type DecimalParseResult, type DecimalRules } from './decimal.js';

// NUMERIC(15, 2): thirteen digits before the point, two after.
export const AMOUNT_RULES: DecimalRules = { maxIntegerDigits: 13, maxFractionDigits: 2, allowZero: false };
/** A limit's capacity: an amount, but a frozen line of zero is allowed. */
export const CAPACITY_RULES: DecimalRules = { ...AMOUNT_RULES, allowZero: true };
// NUMERIC(10, 8): a daily rate below 100 with up to eight decimal places.
export const RATE_RULES: DecimalRules = { maxIntegerDigits: 2, maxFractionDigits: 8, allowZero: true };

/** A drawdown or repayment amount: positive, at most two decimal places; written with exactly two (`1200.50`). */
export function parseAmount(text: string): DecimalParseResult {
  const parsed = parseDecimal(text, AMOUNT_RULES);
  if (!parsed.ok) return parsed;
  const [integer, fraction = ''] = parsed.value.split('.');
  return { ok: true, value: `${integer}.${fraction.padEnd(2, '0')}` };
}
