import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

const CURRENCIES = ['USD', 'EUR', 'GBP', 'CAD', 'JPY'];
const TYPES = ['ACH', 'SEPA', 'BACS', 'WIRE', 'CARD'];

/**
 * What a benchmark file holds:
 * - `records`: alternately a payment method and a credit limit;
 * - `mixed`: 80% records (as above) and 20% ledger lines — every fifth line a
 *   drawdown or repayment on one of the file's credit limits;
 * - `ledger`: ledger lines only, on the credit limits of `limitsFileLines`
 *   (imported first).
 * Ledger lines are spread over many limits and never overdraw one: a limit
 * with nothing outstanding gets a drawdown below its smallest possible
 * capacity (10,000), one with something outstanding a repayment of all of it.
 */
export type FileShape = 'records' | 'mixed' | 'ledger';
export const FILE_SHAPES: readonly FileShape[] = ['records', 'mixed', 'ledger'];

/**
 * The JSON Lines record `i` of a benchmark file: alternately a payment
 * method (even `i`) and a credit limit `cl_i` (odd `i`), with account
 * numbers, decimals as strings and microsecond timestamps, like a real export.
 */
export function benchLine(i: number): string {
  const entity = `ent_${i % 50_000}`;
  const created = new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString().replace('Z', `${String(i % 1000).padStart(3, '0')}Z`);
  if (i % 2 === 0) {
    return JSON.stringify({
      object: 'payment_method',
      uid: `pm_${i}`,
      entity,
      type: TYPES[i % TYPES.length],
      currency: CURRENCIES[i % CURRENCIES.length],
      account_number: String(100_000_000_000 + i * 7919).slice(-12),
      created_at: created,
      updated_at: created,
    });
  }
  return creditLimitLine(i);
}

function creditLimitLine(i: number): string {
  const created = new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString().replace('Z', `${String(i % 1000).padStart(3, '0')}Z`);
  return JSON.stringify({
    object: 'credit_limit',
    uid: `cl_${i}`,
    entity: `ent_${i % 50_000}`,
    currency: CURRENCIES[i % CURRENCIES.length],
    capacity: `${10_000 + (i % 90_000)}.${String(i % 100).padStart(2, '0')}`,
    rate: '0.0005',
    created_at: created,
    updated_at: created,
  });
}

/**
 * Ledger lines over a set of credit limits (`cl_<odd i>`), in file order.
 * About four entries per limit, alternating drawdown and full repayment, so
 * no line is refused.
 */
class LedgerLines {
  private readonly outstandingCents = new Map<number, number>();
  private next = 0;

  /** `limitUid(k)` names the k-th of `limits` credit limits. */
  constructor(
    private readonly limits: number,
    private readonly limitUid: (k: number) => string,
  ) {}

  line(): string {
    const j = this.next++;
    // A multiplicative step spreads consecutive entries over different limits.
    const k = (j * 7919) % this.limits;
    const at = new Date(Date.UTC(2025, 0, 1) + j * 1000).toISOString();
    const outstanding = this.outstandingCents.get(k) ?? 0;
    if (outstanding > 0) {
      this.outstandingCents.set(k, 0);
      return JSON.stringify({ object: 'repayment', id: `rp_${j}`, limit: this.limitUid(k), amount: centsText(outstanding), at });
    }
    const cents = 10_000 + ((j * 104_729) % 899_000); // 100.00 to 9,089.99
    this.outstandingCents.set(k, cents);
    return JSON.stringify({ object: 'drawdown', id: `dd_${j}`, limit: this.limitUid(k), amount: centsText(cents), at });
  }
}

function centsText(cents: number): string {
  return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

/** How many credit limits the `ledger` shape's entries are spread over (imported beforehand). */
export function ledgerShapeLimits(lines: number): number {
  return Math.max(100, Math.ceil(lines / 4));
}

/** Writes an N-line benchmark file of the given shape, respecting back-pressure. */
export async function writeImportFile(path: string, lines: number, shape: FileShape = 'records'): Promise<void> {
  const out = createWriteStream(path);
  const write = async (text: string) => {
    if (!out.write(`${text}\n`)) await once(out, 'drain');
  };
  if (shape === 'records') {
    for (let i = 0; i < lines; i += 1) await write(benchLine(i));
  } else if (shape === 'mixed') {
    const records = lines - Math.floor(lines / 5);
    // The file's credit limits are its odd records: cl_1, cl_3, …; ~4 entries each.
    const limits = Math.max(1, Math.min(Math.floor(records / 2), Math.ceil(lines / 5 / 4)));
    const ledger = new LedgerLines(limits, (k) => `cl_${2 * k + 1}`);
    let record = 0;
    for (let i = 0; i < lines; i += 1) await write(i % 5 === 4 ? ledger.line() : benchLine(record++));
  } else {
    const ledger = new LedgerLines(ledgerShapeLimits(lines), (k) => `cl_${2 * k + 1}`);
    for (let i = 0; i < lines; i += 1) await write(ledger.line());
  }
  out.end();
  await once(out, 'finish');
}

/** The credit limits the `ledger` shape refers to: `cl_1`, `cl_3`, … (`ledgerShapeLimits(lines)` of them). */
export async function writeLedgerLimitsFile(path: string, lines: number): Promise<void> {
  const out = createWriteStream(path);
  for (let k = 0; k < ledgerShapeLimits(lines); k += 1) {
    if (!out.write(`${creditLimitLine(2 * k + 1)}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

// `node --import tsx bench/generate-import-file.ts FILE N [records|mixed|ledger]`
if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, count, shape = 'records'] = process.argv.slice(2);
  const known = FILE_SHAPES.find((candidate) => candidate === shape);
  if (!file || !count || !known) {
    process.stderr.write('usage: generate-import-file.ts FILE LINES [records|mixed|ledger]\n');
    process.exit(2);
  }
  await writeImportFile(file, Number(count), known);
}
