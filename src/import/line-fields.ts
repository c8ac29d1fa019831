import type { DecimalRules } from '../domain/decimal.js';
import { parseDecimal } from '../domain/decimal.js';
import { formatMicros, nowMicros, parseTimestamp } from '../domain/timestamp.js';
import { truncate } from '../domain/truncate.js';
import { isActiveCurrency } from '../domain/currencies.js';
import { isCountryCode } from '../domain/countries.js';
import { asciiUpperCase } from '../domain/ascii-upper-case.js';
import { ASCII_CONTROL_CHARACTERS, hasLoneSurrogate } from '../domain/well-formed-text.js';

const MAX_IDENTIFIER_LENGTH = 255;

/**
 * Reads the fields of one import line, collecting every problem instead of
 * stopping at the first, so a line is reported with all its reasons at once.
 * Messages quote ordinary values (truncated) but never an account number.
 */
export class LineFields {
  readonly problems: string[] = [];

  constructor(private readonly raw: Record<string, unknown>) {}

  problem(message: string): undefined {
    this.problems.push(message);
    return undefined;
  }

  has(name: string): boolean {
    return this.raw[name] !== undefined && this.raw[name] !== null;
  }

  /** A uid, entity or ledger id: 1–255 characters, no control characters. */
  identifier(name: string, required: boolean): string | undefined {
    const value = this.string(name, required);
    if (value === undefined) return undefined;
    if (value.length === 0) return this.problem(`${name} must not be empty`);
    if (value.length > MAX_IDENTIFIER_LENGTH) return this.problem(`${name} must be at most ${MAX_IDENTIFIER_LENGTH} characters`);
    if (value.search(ASCII_CONTROL_CHARACTERS) !== -1) return this.problem(`${name} must not contain control characters`);
    if (hasLoneSurrogate(value)) return this.problem(`${name} must be well-formed Unicode: it holds half of a surrogate pair on its own`);
    return value;
  }

  /** Free text (a name): 1–maxLength characters, no control characters, kept as given. */
  text(name: string, maxLength: number): string | undefined {
    const value = this.string(name, true);
    if (value === undefined) return undefined;
    if (value.trim().length === 0) return this.problem(`${name} must not be empty`);
    if (value.length > maxLength) return this.problem(`${name} must be at most ${maxLength} characters`);
    if (value.search(ASCII_CONTROL_CHARACTERS) !== -1) return this.problem(`${name} must not contain control characters`);
    if (hasLoneSurrogate(value)) return this.problem(`${name} must be well-formed Unicode: it holds half of a surrogate pair on its own`);
    return value;
  }

  /** One of `allowed` in any letter case, returned as `allowed` spells it (`ach` → `ACH`, `ACTIVE` → `active`). */
  oneOf(name: string, allowed: readonly string[]): string | undefined {
    const value = this.string(name, true);
    if (value === undefined) return undefined;
    const upper = asciiUpperCase(value);
    const match = allowed.find((candidate) => asciiUpperCase(candidate) === upper);
    if (match === undefined) return this.problem(`${name} must be one of ${allowed.join(', ')}, got '${truncate(value)}'`);
    return match;
  }

  /** An active ISO 4217 code, any letter case, returned upper case. */
  currency(name: string): string | undefined {
    const value = this.string(name, true);
    if (value === undefined) return undefined;
    const code = asciiUpperCase(value);
    if (!/^[A-Z]{3}$/.test(code)) return this.problem(`${name} must be a three-letter ISO 4217 currency code, got '${truncate(value)}'`);
    if (!isActiveCurrency(code)) return this.problem(`${name} must be an active ISO 4217 currency code, got '${code}'`);
    return code;
  }

  /** An assigned ISO 3166-1 alpha-2 code, any letter case, returned upper case. */
  country(name: string): string | undefined {
    const value = this.string(name, true);
    if (value === undefined) return undefined;
    const code = asciiUpperCase(value);
    if (!/^[A-Z]{2}$/.test(code)) return this.problem(`${name} must be a two-letter ISO 3166-1 country code, got '${truncate(value)}'`);
    if (!isCountryCode(code)) return this.problem(`${name} must be an assigned ISO 3166-1 alpha-2 country code, got '${code}'`);
    return code;
  }

  /** A decimal given as a JSON string or number (already turned into its exact text). */
  decimal(name: string, rules: DecimalRules): string | undefined {
    const value = this.raw[name];
    if (value === undefined || value === null) return this.problem(`${name} is required`);
    if (typeof value !== 'string') return this.problem(`${name} must be a decimal number or a string such as "1200.50"`);
    const parsed = parseDecimal(value, rules);
    if (!parsed.ok) return this.problem(`${name} ${parsed.reason}, got '${truncate(value)}'`);
    return parsed.value;
  }

  /** An optional timestamp in any form the query parameters accept, canonicalized. */
  timestamp(name: string, options: { notInTheFuture?: boolean } = {}): string | undefined {
    const value = this.string(name, false);
    if (value === undefined) return undefined;
    const parsed = parseTimestamp(value, 'from');
    if (!parsed.ok) return this.problem(`${name} ${parsed.reason}, got '${truncate(value)}'`);
    const canonical = formatMicros(parsed.micros);
    if (options.notInTheFuture && parsed.micros > nowMicros()) return this.problem(`${name} must not be in the future, got '${canonical}'`);
    return canonical;
  }

  /**
   * The last two digits of the write-only `source` (an account number), or
   * `name` itself (`last_2`). The account number goes no further than this
   * function, and no message quotes it.
   */
  lastTwo(source: string, name: string): string | undefined {
    const account = this.raw[source];
    const lastTwo = this.raw[name];
    const hasAccount = account !== undefined && account !== null;
    const hasLastTwo = lastTwo !== undefined && lastTwo !== null;
    if (hasAccount && hasLastTwo) return this.problem(`give ${source} or ${name}, not both`);
    if (hasAccount) {
      if (typeof account !== 'string') return this.problem(`${source} must be a string (a number would lose leading zeros)`);
      const compact = account.replace(/[\s-]/g, '');
      if (!/^[A-Za-z0-9]*[0-9]{2}$/.test(compact)) {
        return this.problem(`${source} must be letters and digits ending in at least two digits (spaces and dashes allowed)`);
      }
      return compact.slice(-2);
    }
    if (hasLastTwo) {
      if (typeof lastTwo !== 'string' || !/^[0-9]{2}$/.test(lastTwo)) return this.problem(`${name} must be a string of exactly two digits`);
      return lastTwo;
    }
    return this.problem(`${source} or ${name} is required`);
  }

  /** Rejects fields the object does not have, so a typo is not silently ignored. */
  rejectUnknown(known: ReadonlySet<string>, hints: Readonly<Record<string, string>> = {}): void {
    for (const name of Object.keys(this.raw)) {
      if (known.has(name)) continue;
      this.problem(hints[name] ?? `unknown field '${truncate(name)}'`);
    }
  }

  private string(name: string, required: boolean): string | undefined {
    const value = this.raw[name];
    if (value === undefined || value === null) return required ? this.problem(`${name} is required`) : undefined;
    if (typeof value !== 'string') return this.problem(`${name} must be a string`);
    return value;
  }
}
