import { rename, writeFile } from 'node:fs/promises';
import { Gauge, Registry } from 'prom-client';
import type { ImportProgress, ImportSummary } from '../import/index.js';

const WRITE_EVERY_MS = 1000;

type Phase = ImportProgress['phase'] | 'failed';
const PHASES: readonly Phase[] = ['reading', 'merging', 'done', 'failed'];

/**
 * `import --metrics-file PATH`: the import's progress in Prometheus' text format, for node_exporter's
 * textfile collector (an import is a batch job that no server scrapes). The file is replaced whole
 * (written beside it, then renamed), at most once a second while lines are read and at every change of
 * phase, so a scrape never reads half of it.
 */
export function importMetricsFile(file: string, org: string, inputBytes: number | undefined, importId: string) {
  const registry = new Registry();
  registry.setDefaultLabels({ org });
  const gauge = (name: string, help: string, labelNames: readonly string[] = []) => new Gauge({ name, help, labelNames, registers: [registry] });
  const lines = gauge('lending_api_import_lines_read', 'Lines of the input read so far.');
  const bytes = gauge('lending_api_import_read_bytes', 'Bytes of the input read so far.');
  const size = gauge('lending_api_import_input_bytes', 'Size of the input file in bytes (absent for a pipe).');
  const phase = gauge('lending_api_import_phase', 'The phase the import is in: 1 for the current one.', ['phase']);
  const started = gauge('lending_api_import_start_time_seconds', 'When the import started (Unix time).');
  const updated = gauge('lending_api_import_last_update_time_seconds', 'When this file was last written (Unix time): a stalled import stops moving it.');
  const records = gauge('lending_api_import_records', 'Records of a finished import, by collection and outcome.', ['collection', 'outcome']);
  // The run's id as a label of its own series (an info metric), so the others keep theirs from run to run.
  gauge('lending_api_import_info', "The import run: its id, which its changes' events carry as import_id.", ['import_id']).set({ import_id: importId }, 1);

  if (inputBytes !== undefined) size.set(inputBytes);
  started.set(Date.now() / 1000);
  let lastWrite = 0;
  let writing: Promise<void> = Promise.resolve();

  const write = (): Promise<void> => {
    lastWrite = Date.now();
    updated.set(lastWrite / 1000);
    writing = writing.then(async () => {
      const temporary = `${file}.${process.pid}.tmp`;
      await writeFile(temporary, await registry.metrics());
      await rename(temporary, file);
    });
    return writing;
  };
  let current: Phase | undefined;
  const enter = (next: Phase): void => {
    current = next;
    for (const name of PHASES) phase.set({ phase: name }, name === next ? 1 : 0);
  };
  enter('reading');

  return {
    onProgress(progress: ImportProgress): void {
      lines.set(progress.lines);
      bytes.set(progress.bytes);
      const changed = current !== progress.phase;
      enter(progress.phase);
      if (changed || Date.now() - lastWrite >= WRITE_EVERY_MS) void write();
    },
    /** The end: the counts of a finished import, or `failed`; resolves once the file is written. */
    finish(summary: ImportSummary | undefined): Promise<void> {
      if (summary) {
        lines.set(summary.lines);
        for (const [table, counts] of Object.entries(summary.collections)) {
          for (const outcome of ['inserted', 'updated', 'unchanged'] as const) records.set({ collection: table, outcome }, counts[outcome]);
        }
        records.set({ collection: 'ledger_entries', outcome: 'inserted' }, summary.ledger_entries.applied);
        records.set({ collection: 'ledger_entries', outcome: 'unchanged' }, summary.ledger_entries.unchanged);
      }
      enter(summary ? 'done' : 'failed');
      return write();
    },
  };
}
