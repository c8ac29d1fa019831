import { DomainError, requireOrganization } from '../auth/organizations.js';
import type { Store, Transaction } from '../store/store.js';
import { LineErrorList } from './import-error.js';
import { applyLedgerLines, checkLedgerLines, type LedgerCounts } from './merge-ledger.js';
import { checkCapacities, mergeCreditLimits, mergePaymentMethods, type MergeCounts } from './merge-records.js';
import { readLines } from './read-lines.js';
import { CREATE_STAGING_TABLE, STAGING_COPY_TARGET, STAGING_TABLE, toCopyRow } from './staging.js';
import { validateLine } from './validate-line.js';

export interface ImportProgress {
  readonly phase: 'reading' | 'merging' | 'done';
  /** Lines read so far (blank lines included). */
  readonly lines: number;
  readonly bytes: number;
}

export interface ImportOptions {
  /** How many invalid lines to list; the rest are only counted. Default 100. */
  readonly maxErrors?: number;
  /** Longer lines are rejected without being buffered. Default 1 MiB. */
  readonly maxLineBytes?: number;
  /** Called every few thousand lines and at each phase change. */
  readonly onProgress?: (progress: ImportProgress) => void;
}

export interface ImportSummary {
  /** Non-blank lines read. */
  readonly lines: number;
  /** Records (payment methods and credit limits) created, changed, or already as given. */
  readonly inserted: number;
  readonly updated: number;
  readonly unchanged: number;
  readonly payment_methods: MergeCounts;
  readonly credit_limits: MergeCounts;
  readonly ledger_entries: LedgerCounts;
}

const DEFAULT_MAX_ERRORS = 100;
const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;
const ROWS_PER_CHUNK = 2000;
const PROGRESS_EVERY_LINES = 5000;
const CHECK_VIOLATION = '23514';

/**
 * Imports a JSON Lines stream (SPEC §8) into one organization, atomically.
 *
 * One streaming pass validates every line and COPYs the valid ones into a
 * temporary staging table; memory holds one line and one COPY chunk at a
 * time, whatever the input size. If any line is invalid, every invalid line
 * is reported (the first `maxErrors` listed, the rest counted) in an
 * `ImportError` and nothing is written. Otherwise, still in the same
 * transaction: records are upserted by uid with one set-based statement per
 * table (the last line of a uid wins), then ledger entries are applied in
 * file order, idempotent by id. Importing the same input twice changes
 * nothing. A process killed midway leaves nothing: the transaction never
 * commits.
 *
 * @example
 * const summary = await importJsonl(store, 'org_acme', fs.createReadStream('data.jsonl'));
 * console.log(summary.inserted, summary.ledger_entries.applied);
 */
export async function importJsonl(
  store: Store,
  orgUid: string,
  input: AsyncIterable<Buffer | string>,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  const org = await requireOrganization(store, orgUid);
  const maxErrors = options.maxErrors ?? DEFAULT_MAX_ERRORS;
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const report = options.onProgress ?? (() => {});
  try {
    return await store.transaction(async (tx) => {
      // Imports of one organization run one at a time: the merge relies on it.
      await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('lending-api import ' || $1::text, 0))`, [org.id]);
      await tx.exec(CREATE_STAGING_TABLE);
      const errors = new LineErrorList(maxErrors);
      const read = { lines: 0, nonBlank: 0, bytes: 0 };

      async function* copyChunks(): AsyncGenerator<string> {
        let chunk = '';
        let rows = 0;
        for await (const line of readLines(input, maxLineBytes)) {
          read.lines = line.number;
          read.bytes = line.bytesRead;
          if (line.number % PROGRESS_EVERY_LINES === 0) report({ phase: 'reading', lines: read.lines, bytes: read.bytes });
          if (line.tooLong) {
            errors.add({ line: line.number, reason: `is longer than ${maxLineBytes} bytes` });
            continue;
          }
          if (line.text.trim() === '') continue;
          read.nonBlank += 1;
          const result = validateLine(line.text);
          if (!result.ok) {
            errors.add({ line: line.number, reason: result.reason });
            continue;
          }
          // Once a line is invalid nothing will be written: keep validating, stop copying.
          if (errors.total > 0) continue;
          chunk += toCopyRow(line.number, result.record);
          rows += 1;
          if (rows === ROWS_PER_CHUNK) {
            yield chunk;
            chunk = '';
            rows = 0;
          }
        }
        if (chunk && errors.total === 0) yield chunk;
      }

      await tx.copyFrom(STAGING_COPY_TARGET, copyChunks());
      if (errors.total > 0) throw errors.toError();
      report({ phase: 'merging', lines: read.lines, bytes: read.bytes });
      const summary = await merge(tx, org.id, read.nonBlank, errors, maxErrors);
      report({ phase: 'done', lines: read.lines, bytes: read.bytes });
      return summary;
    });
  } catch (error) {
    if ((error as { code?: unknown }).code === CHECK_VIOLATION) {
      throw new DomainError(
        'a drawdown recorded while the import ran left a credit limit above the capacity this import gives it; nothing was imported — run the import again',
      );
    }
    throw error;
  }
}

async function merge(tx: Transaction, orgId: string, lines: number, errors: LineErrorList, maxErrors: number): Promise<ImportSummary> {
  await tx.query(`ANALYZE ${STAGING_TABLE}`);
  await checkCapacities(tx, orgId, errors, maxErrors);
  if (errors.total > 0) throw errors.toError();
  const paymentMethods = await mergePaymentMethods(tx, orgId);
  const creditLimits = await mergeCreditLimits(tx, orgId);
  await checkLedgerLines(tx, orgId, errors, maxErrors);
  if (errors.total > 0) throw errors.toError();
  const ledger = await applyLedgerLines(tx, orgId, errors, maxErrors);
  if (errors.total > 0) throw errors.toError();
  return {
    lines,
    inserted: paymentMethods.inserted + creditLimits.inserted,
    updated: paymentMethods.updated + creditLimits.updated,
    unchanged: paymentMethods.unchanged + creditLimits.unchanged,
    payment_methods: paymentMethods,
    credit_limits: creditLimits,
    ledger_entries: ledger,
  };
}
