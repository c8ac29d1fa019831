import { createReadStream, fstatSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { ImportError, importJsonl, newImportId, type ImportProgress, type ImportSummary } from '../../import/index.js';
import { terminalProgress } from '../import-progress.js';
import { print, UsageError, type OutputOptions } from '../output.js';
import { publishAfterWrite } from '../publish-after-write.js';
import { withStore } from '../with-store.js';

export interface ImportFlags extends OutputOptions {
  org: string;
  maxErrors?: string;
  /** Where to keep the import's progress for Prometheus (node_exporter's textfile collector). */
  metricsFile?: string;
}

/** `import`: loads a JSON Lines file atomically, with a progress line on a terminal. */
export async function runImport(file: string, flags: ImportFlags): Promise<void> {
  const maxErrors = Number(flags.maxErrors ?? '100');
  if (!Number.isInteger(maxErrors) || maxErrors < 1) throw new UsageError(`--max-errors must be a positive integer, got '${flags.maxErrors}'`);
  const { input, size } = await openInput(file);
  const progress = process.stderr.isTTY ? terminalProgress(process.stderr, size) : undefined;
  const importId = newImportId();
  const metrics = flags.metricsFile ? (await import('../import-metrics-file.js')).importMetricsFile(flags.metricsFile, flags.org, size, importId) : undefined;
  const onProgress =
    progress || metrics
      ? (report: ImportProgress) => {
          progress?.onProgress(report);
          metrics?.onProgress(report);
        }
      : undefined;
  const started = Date.now();
  let imported: ImportSummary | undefined;
  try {
    const { summary, seconds, events } = await withStore(
      async (store) => {
        imported = await importJsonl(store, flags.org, input, { maxErrors, importId, ...(onProgress ? { onProgress } : {}) });
        const importSeconds = (Date.now() - started) / 1000;
        progress?.done();
        await metrics?.finish(imported);
        return { summary: imported, seconds: importSeconds, events: await publishAfterWrite(store, flags.org) };
      },
      { bulk: true },
    );
    const { collections, ...totals } = summary;
    // events_published: null when the publication failed (a warning says so); the import stands.
    const json = { org: flags.org, import_id: importId, ...totals, ...collections, seconds, events_published: events ?? null };
    print(flags, json, summaryText(flags.org, importId, summary, seconds, events));
  } catch (error) {
    if (imported) throw error; // committed: the metrics file already says done
    progress?.done();
    await metrics?.finish(undefined);
    if (flags.json && error instanceof ImportError) {
      print(flags, { error: 'invalid_lines', invalid_lines: error.total, errors: error.errors, not_listed: error.total - error.errors.length }, '');
    }
    throw error;
  }
}

async function openInput(file: string): Promise<{ input: NodeJS.ReadableStream & AsyncIterable<Buffer>; size: number | undefined }> {
  if (file === '-') {
    const info = fstatSync(0);
    return { input: process.stdin, size: info.isFile() ? info.size : undefined };
  }
  const info = await stat(file).catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`cannot read ${file}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
  });
  if (!info.isFile()) throw new UsageError(`cannot read ${file}: not a file`);
  return { input: createReadStream(file, { highWaterMark: 256 * 1024 }), size: info.size };
}

function summaryText(org: string, importId: string, summary: ImportSummary, seconds: number, events: number | undefined): string {
  const counts = (c: { inserted: number; updated: number; unchanged: number }) =>
    `${c.inserted} inserted, ${c.updated} updated, ${c.unchanged} unchanged`;
  const collections = Object.entries(summary.collections).map(([table, c]) => [table.replaceAll('_', ' '), counts(c)]);
  const ledger = `${summary.ledger_entries.applied} recorded, ${summary.ledger_entries.unchanged} already recorded`;
  const rows = [...collections, ['ledger entries', ledger], ['events', events === undefined ? 'not published yet (see the warning)' : `${events} published`]];
  const width = Math.max(...rows.map(([name = '']) => name.length)) + 1;
  return [`imported ${summary.lines} ${summary.lines === 1 ? 'line' : 'lines'} into ${org} in ${seconds.toFixed(1)}s (import ${importId})`, ...rows.map(([name = '', text]) => `  ${`${name}:`.padEnd(width + 1)}${text}`)].join('\n');
}
