import { isLosslessNumber, parse as parseLossless } from 'lossless-json';

export type JsonLineResult = { ok: true; value: Record<string, unknown> } | { ok: false; reason: string };

/**
 * Parses one JSON Lines object. Decimal fields given as JSON numbers are
 * returned as their exact source text (a string), never as a binary float:
 * `JSON.parse` would read `0.1000000000000000055` as `0.1`. Only the lines
 * that carry such numbers pay for the slower lossless parse.
 *
 * Error messages never quote the line: it may hold an account number.
 */
export function parseJsonLine(text: string, decimalFields: ReadonlySet<string>): JsonLineResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const position = /position (\d+)/.exec(error instanceof Error ? error.message : '')?.[1];
    return { ok: false, reason: `is not valid JSON${position === undefined ? '' : ` (at character ${Number(position) + 1})`}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, reason: 'must be a JSON object' };
  const record = value as Record<string, unknown>;
  let hasNumber = false;
  for (const field of decimalFields) if (typeof record[field] === 'number') hasNumber = true;
  if (!hasNumber) return { ok: true, value: record };

  let exact: Record<string, unknown>;
  try {
    exact = parseLossless(text) as Record<string, unknown>;
  } catch {
    return { ok: false, reason: 'has a duplicate key' };
  }
  for (const field of decimalFields) {
    const number = exact[field];
    if (isLosslessNumber(number)) record[field] = number.value;
  }
  return { ok: true, value: record };
}
