import { setImmediate } from 'node:timers/promises';
import { requireOrganization } from '../organizations/organizations.js';
import { DomainError } from '../domain/domain-error.js';
import { setLocalForWorkers, type Store, type Transaction } from '../store/store.js';
import { LineErrorList } from './import-error.js';
import { WAIT_FOR_SYNCHRONOUS_STANDBY } from '../ledger/index.js';
import { eventCauseStatement } from '../ledger/event-context.js';
import { newImportId } from './import-id.js';
import { applyLedgerLines, checkLedgerLimits, newLedgerStaging, stageLedgerBatch, type LedgerCounts, type LedgerStaging } from './merge-ledger.js';
import { RecordMerger, type MergeCounts } from './merge-records.js';
import { checkReferences, CREATE_UNRESOLVED_REFERENCES_TABLE, stageUnresolvedReferences } from './check-references.js';
import { RECORD_KINDS } from './record-kinds.js';
import { CREATE_LOAN_LINES_TABLE, mergeLoans, stageLoanBatch } from './merge-loans.js';
import { readLines } from './read-lines.js';
import {
  CREATE_LEDGER_FIRST_TABLE,
  CREATE_LEDGER_UNRESOLVED_TABLE,
  CREATE_STAGING_TABLE,
  EMPTY_STAGING_TABLE,
  STAGING_COPY_TARGET,
  toCopyRow,
} from './staging.js';
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
  /** Lines merged per batch (fewer if they pass 16 MB; the first batches are smaller). Default 20,000. */
  readonly batchLines?: number;
  /** The run's id, which the events of its changes carry (SPEC §3c). Default: a new `imp_…`. */
  readonly importId?: string;
}

export interface ImportSummary {
  /** Non-blank lines read. */
  readonly lines: number;
  /** Records (of every collection) created, changed, or already as given. */
  readonly inserted: number;
  readonly updated: number;
  readonly unchanged: number;
  /** The same per collection, keyed by table: `payment_methods`, `credit_limits`, `entities`, … */
  readonly collections: Readonly<Record<string, MergeCounts>>;
  readonly ledger_entries: LedgerCounts;
}

const DEFAULT_MAX_ERRORS = 100;
const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;
const DEFAULT_BATCH_LINES = 20_000;
const FIRST_BATCH_LINES = 1_000;
const MAX_BATCH_BYTES = 16 * 1024 * 1024;
const INITIAL_BATCH_BYTES = 4 * 1024 * 1024;
const COPY_SLICE_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;
const PROGRESS_EVERY_LINES = 5000;
const YIELD_EVERY_LINES = 20;
const CHECK_VIOLATION = '23514';

/**
 * The import's temporary tables live in the backend's own buffers, 8 MB by
 * default: a million-line file's outgrow them, and every page evicted then
 * goes out to the kernel and back (1,000,000 ledger lines: 1–2 s of 24).
 * The size can only be set before the session's first temporary table (a
 * pooled connection that has made one keeps what it had) and is a ceiling,
 * not an allocation; it is held until the session ends, which for
 * `lending-api import` is the end of the command. Not on PGlite, whose
 * memory, once grown, is never given back.
 */
const SIZE_TEMP_BUFFERS = `SELECT set_config('temp_buffers', '256MB', true) WHERE pg_my_temp_schema() = 0`;

/**
 * Imports a JSON Lines stream (SPEC §8) into one organization, atomically.
 *
 * One streaming pass validates every line and COPYs the valid ones, batch
 * by batch, into a temporary staging table, from which each batch's records
 * are upserted by uid with a few set-based statements (the last line of a
 * uid in a batch wins) while the next batch is parsed; memory holds two
 * batches, whatever the input size. Ledger entries are applied at the end, in
 * file order, idempotent by id. All of it is one transaction: if any line is
 * invalid, every invalid line is reported in the same run — field errors,
 * references to limits neither stored nor in the file's valid lines, ledger
 * lines that would overdraw given the lines before them (the first
 * `maxErrors` listed in line order, the rest counted) — in an `ImportError`,
 * and nothing is written. Importing the
 * same input twice changes nothing. A process killed midway leaves nothing:
 * the transaction never commits.
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
  const batchLines = options.batchLines ?? DEFAULT_BATCH_LINES;
  const cause = eventCauseStatement({ importId: options.importId ?? newImportId() });
  try {
    return await store.transaction(async (tx) => {
      // Imports of one organization run one at a time: the merge relies on it.
      await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('lending-api import ' || current_schema() || ' ' || $1::text, 0))`, [org.id]);
      // The records' org_id has no per-row foreign key (it cost an eighth of
      // every insert); holding the organization's row keeps it from being
      // deleted under the import instead.
      await tx.query('SELECT 1 FROM organizations WHERE id = $1 FOR KEY SHARE', [org.id]);
      // Many mid-sized statements: compiling each one costs more than it
      // saves. And every lookup here fetches one row by a unique key, which
      // a plain index scan does best; without statistics (a first big
      // import) the planner may pick a bitmap scan for it instead. The
      // ledger lines' sorts (file order, first line per id, running sums)
      // hold a whole file's lines: in memory rather than spilled to disk.
      // Ledger lines and capacities move balances: like `draw`, success only once the synchronous standby shows them.
      await tx.exec(`SET LOCAL jit = off; SET LOCAL enable_bitmapscan = off; SET LOCAL work_mem = '64MB'; ${WAIT_FOR_SYNCHRONOUS_STANDBY}`);
      // The events of every record this transaction creates or changes name the import (017_events.sql's triggers read it).
      await tx.exec(setLocalForWorkers(cause));
      if (store.kind === 'postgres') await tx.query(SIZE_TEMP_BUFFERS);
      await tx.exec(CREATE_STAGING_TABLE);
      await tx.exec(CREATE_LEDGER_UNRESOLVED_TABLE);
      await tx.exec(CREATE_LEDGER_FIRST_TABLE);
      await tx.exec(CREATE_UNRESOLVED_REFERENCES_TABLE);
      await tx.exec(CREATE_LOAN_LINES_TABLE);
      const records = await RecordMerger.start(tx, org.id, UPSERTED_KINDS);
      const ledger = newLedgerStaging();
      const errors = new LineErrorList(maxErrors);
      const read = { lines: 0, nonBlank: 0, bytes: 0 };

      // PostgreSQL copies and merges one batch while this process parses the
      // next into the other buffer, so the two CPUs work at once; parsing
      // waits only when PostgreSQL is a whole batch behind. The first
      // batches are small, so PostgreSQL starts early. Memory: two batches.
      let filling = new Batch();
      let spare = new Batch();
      let limit = Math.min(FIRST_BATCH_LINES, batchLines);
      let merging: Promise<void> = Promise.resolve();
      const flush = async (): Promise<void> => {
        const batch = filling;
        // The valid lines are merged even after an invalid one (the
        // transaction will roll back): the checks that need the store and
        // the rest of the file (references, overdraws) then report in the
        // same run.
        if (batch.rows === 0) return;
        const previous = merging;
        merging = (async () => {
          await previous;
          await tx.copyFrom(STAGING_COPY_TARGET, batch.slices());
          await mergeBatch(tx, org.id, records, ledger, batch, errors, maxErrors);
          batch.clear();
        })();
        merging.catch(() => {}); // observed by the next await of `merging`
        [filling, spare] = [spare, filling];
        limit = Math.min(limit * 2, batchLines);
        // The other buffer must be free before it is filled again.
        await previous;
      };

      try {
        for await (const line of readLines(input, maxLineBytes)) {
          read.lines = line.number;
          read.bytes = line.bytesRead;
          if (line.number % PROGRESS_EVERY_LINES === 0) report({ phase: 'reading', lines: read.lines, bytes: read.bytes });
          // Parsing a read chunk is synchronous work; let the merge's query
          // results in often, or PostgreSQL waits for this loop between statements.
          if (line.number % YIELD_EVERY_LINES === 0) await setImmediate();
          if (line.tooLong) {
            errors.add({ line: line.number, reason: `is longer than ${maxLineBytes} bytes` });
            continue;
          }
          if (line.notUtf8) {
            errors.add({ line: line.number, reason: 'is not valid UTF-8 (a file in another encoding must be converted first)' });
            continue;
          }
          if (line.text.trim() === '') continue;
          read.nonBlank += 1;
          const result = validateLine(line.text);
          if (!result.ok) {
            errors.add({ line: line.number, reason: result.reason });
            continue;
          }
          filling.add(toCopyRow(line.number, result.record), result.record.line === 'record' ? result.record.kind.object : LEDGER);
          if (result.record.line === 'ledger') filling.limitUids.add(result.record.limit);
          if (filling.rows >= limit || filling.bytes >= MAX_BATCH_BYTES) await flush();
        }
        report({ phase: 'merging', lines: read.lines, bytes: read.bytes });
        await flush();
      } finally {
        await merging.catch(() => {});
      }
      await merging;
      const summary = await finish(tx, org.id, records, ledger, read.nonBlank, errors, maxErrors);
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

/**
 * COPY text rows of one batch, with how many lines of each kind it holds.
 * The rows are encoded into one reused Buffer as they come: holding
 * thousands of row strings until the batch is full would make every one of
 * them survive into the old generation and cost the garbage collector more
 * than the parsing does.
 */
class Batch {
  private buffer = Buffer.allocUnsafe(INITIAL_BATCH_BYTES);
  rows = 0;
  bytes = 0;
  /** Lines per record kind's `object`, and ledger lines under LEDGER. */
  kinds: Record<string, number> = {};
  /** The credit limits the batch's ledger lines name. */
  readonly limitUids = new Set<string>();

  add(row: string, kind: string): void {
    const room = row.length * 3; // the most UTF-8 bytes a UTF-16 string can need
    if (this.bytes + room > this.buffer.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.bytes + room));
      this.buffer.copy(bigger, 0, 0, this.bytes);
      this.buffer = bigger;
    }
    this.bytes += this.buffer.write(row, this.bytes, 'utf8');
    this.rows += 1;
    this.kinds[kind] = (this.kinds[kind] ?? 0) + 1;
  }

  /** The rows in slices of about COPY_SLICE_BYTES, each ending with a whole row. */
  async *slices(): AsyncGenerator<Uint8Array> {
    let start = 0;
    while (start < this.bytes) {
      let end = this.bytes;
      if (start + COPY_SLICE_BYTES < this.bytes) {
        const newline = this.buffer.lastIndexOf(NEWLINE, start + COPY_SLICE_BYTES - 1);
        end = newline >= start ? newline + 1 : this.bytes;
      }
      yield this.buffer.subarray(start, end);
      start = end;
    }
  }

  clear(): void {
    this.rows = 0;
    this.bytes = 0;
    this.kinds = {};
    this.limitUids.clear();
  }
}

const LEDGER = 'ledger';
/** Collections upserted by uid (merge-records.ts), and those whose lines draw on a limit (merge-loans.ts). */
const UPSERTED_KINDS = RECORD_KINDS.kinds.filter((kind) => kind.ledger === undefined);
const LOAN_KINDS = RECORD_KINDS.kinds.filter((kind) => kind.ledger === 'loan');

async function mergeBatch(
  tx: Transaction,
  orgId: string,
  records: RecordMerger,
  ledger: LedgerStaging,
  batch: Batch,
  errors: LineErrorList,
  maxErrors: number,
): Promise<void> {
  const kinds = batch.kinds;
  const ledgerLines = kinds[LEDGER] ?? 0;
  await records.mergeBatch(kinds, errors, maxErrors);
  await stageUnresolvedReferences(tx, orgId, RECORD_KINDS.kinds, kinds);
  for (const kind of LOAN_KINDS) if ((kinds[kind.object] ?? 0) > 0) await stageLoanBatch(tx, kind.object);
  // After the records: a limit this batch defines is found for its ledger lines.
  if (ledgerLines > 0) await stageLedgerBatch(tx, orgId, ledgerLines, batch.limitUids, ledger, errors, maxErrors);
  await tx.query(EMPTY_STAGING_TABLE);
}

async function finish(
  tx: Transaction,
  orgId: string,
  records: RecordMerger,
  staged: LedgerStaging,
  lines: number,
  errors: LineErrorList,
  maxErrors: number,
): Promise<ImportSummary> {
  const collections = await records.counts();
  await checkReferences(tx, orgId, RECORD_KINDS.kinds, errors, maxErrors);
  for (const kind of LOAN_KINDS) collections[kind.table] = await mergeLoans(tx, orgId, errors, maxErrors);
  await checkLedgerLimits(tx, orgId, staged, errors, maxErrors);
  // Writes nothing once any line is invalid, but still finds every overdraw.
  const ledger = await applyLedgerLines(tx, orgId, errors, maxErrors);
  if (errors.total > 0) throw errors.toError();
  return {
    lines,
    inserted: sum(collections, 'inserted'),
    updated: sum(collections, 'updated'),
    unchanged: sum(collections, 'unchanged'),
    collections,
    ledger_entries: ledger,
  };
}

function sum(collections: Readonly<Record<string, MergeCounts>>, count: keyof MergeCounts): number {
  return Object.values(collections).reduce((total, counts) => total + counts[count], 0);
}
