import { createReadStream, fstatSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Command } from 'commander';
import type { ImportSummary } from '../../import/index.js';
import { terminalProgress } from '../import-progress.js';
import { print, UsageError, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

interface ImportFlags extends OutputOptions {
  org: string;
  maxErrors?: string;
}

export function registerImport(program: Command): void {
  program
    .command('import')
    .description('load a JSON Lines file of records (payment methods, credit limits, entities, …), drawdowns and repayments; atomic: one invalid line and nothing is written')
    .argument('<file>', "JSON Lines file, or '-' for standard input")
    .requiredOption('--org <org>', 'organization ID')
    .option('--max-errors <n>', 'how many invalid lines to list (the rest are counted)', '100')
    .option('--json', 'machine-readable output')
    .action(async (file: string, flags: ImportFlags) => {
      const maxErrors = Number(flags.maxErrors ?? '100');
      if (!Number.isInteger(maxErrors) || maxErrors < 1) throw new UsageError(`--max-errors must be a positive integer, got '${flags.maxErrors}'`);
      // Loaded here, not at the top: `--help` need not load the importer.
      const { ImportError, importJsonl } = await import('../../import/index.js');
      const { input, size } = await openInput(file);
      const progress = process.stderr.isTTY ? terminalProgress(process.stderr, size) : undefined;
      const started = Date.now();
      try {
        const summary = await withStore((store) =>
          importJsonl(store, flags.org, input, { maxErrors, ...(progress ? { onProgress: progress.onProgress } : {}) }),
          { bulk: true },
        );
        progress?.done();
        const seconds = (Date.now() - started) / 1000;
        const { collections, ...totals } = summary;
        print(flags, { org: flags.org, ...totals, ...collections, seconds }, summaryText(flags.org, summary, seconds));
      } catch (error) {
        progress?.done();
        if (flags.json && error instanceof ImportError) {
          print(flags, { error: 'invalid_lines', invalid_lines: error.total, errors: error.errors, not_listed: error.total - error.errors.length }, '');
        }
        throw error;
      }
    });
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

function summaryText(org: string, summary: ImportSummary, seconds: number): string {
  const counts = (c: { inserted: number; updated: number; unchanged: number }) =>
    `${c.inserted} inserted, ${c.updated} updated, ${c.unchanged} unchanged`;
  const collections = Object.entries(summary.collections).map(([table, c]) => [table.replaceAll('_', ' '), counts(c)]);
  const ledger = `${summary.ledger_entries.applied} recorded, ${summary.ledger_entries.unchanged} already recorded`;
  const rows = [...collections, ['ledger entries', ledger]];
  const width = Math.max(...rows.map(([name = '']) => name.length)) + 1;
  return [`imported ${summary.lines} ${summary.lines === 1 ? 'line' : 'lines'} into ${org} in ${seconds.toFixed(1)}s`, ...rows.map(([name = '', text]) => `  ${`${name}:`.padEnd(width + 1)}${text}`)].join('\n');
}
