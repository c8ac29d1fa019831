import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

const CURRENCIES = ['USD', 'EUR', 'GBP', 'CAD', 'JPY'];
const TYPES = ['ACH', 'SEPA', 'BACS', 'WIRE', 'CARD'];

/**
 * The JSON Lines line `i` of a benchmark file: alternately a payment method
 * and a credit limit, with account numbers, decimals as strings and
 * microsecond timestamps, like a real export.
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
  return JSON.stringify({
    object: 'credit_limit',
    uid: `cl_${i}`,
    entity,
    currency: CURRENCIES[i % CURRENCIES.length],
    capacity: `${10_000 + (i % 90_000)}.${String(i % 100).padStart(2, '0')}`,
    rate: '0.0005',
    created_at: created,
    updated_at: created,
  });
}

/** Writes an N-line benchmark file, respecting back-pressure. */
export async function writeImportFile(path: string, lines: number): Promise<void> {
  const out = createWriteStream(path);
  for (let i = 0; i < lines; i += 1) {
    if (!out.write(`${benchLine(i)}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

// `node --import tsx bench/generate-import-file.ts FILE N`
if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, count] = process.argv.slice(2);
  if (!file || !count) {
    process.stderr.write('usage: generate-import-file.ts FILE LINES\n');
    process.exit(2);
  }
  await writeImportFile(file, Number(count));
}
