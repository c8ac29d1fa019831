/**
 * The machine-readable record of one `npm run bench` run:
 * `bench/results/<timestamp>-<commit>.json`, read by `npm run bench:chart`
 * (bench/chart.ts). The benchmark's history lives in these files, not in
 * docs/performance.md's prose.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export const RESULTS_DIR = path.join(import.meta.dirname, 'results');

/** One process's figures for one measurement. */
export interface Figures {
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The serving process's CPU time (user + system) per request answered. */
  readonly cpuUsPerRequest?: number | undefined;
  readonly failures?: number | undefined;
}

export interface ScenarioFigures {
  /** `a`…`f` reads, `w1`, `w2` writes, `pglite` the embedded store's (a). */
  readonly id: string;
  readonly title: string;
  /** Null where a transcribed run did not say. */
  readonly connections: number | null;
  readonly service: Figures;
  readonly bare?: Figures | undefined;
  /** Service CPU per request over the bare handler's. */
  readonly serviceOverBare?: number | undefined;
  readonly ceilingPerSecond?: number | undefined;
  /**
   * The flood rows: the quiet organization's reads alone, before the flood. Their `service` is its reads
   * under the flood (`failures`: its 5xx), with the flood's answers per second and the service's CPU per answer.
   */
  readonly atRest?: Figures | undefined;
}

export interface Machine {
  readonly cpus: number | null;
  readonly model: string | null;
  readonly memoryMiB: number | null;
  readonly node: string | null;
  readonly database?: string | undefined;
  /** 1, 5 and 15 minutes, when the record was written: how busy the machine was. */
  readonly loadAverage?: readonly number[] | undefined;
  /** What the run's figures owe to the machine's state (load, steal, a new VM). */
  readonly note?: string | undefined;
}

export interface BenchRecord {
  readonly format: 1;
  /** ISO 8601, UTC. */
  readonly date: string;
  /** Short commit hash read when the run started, `+dirty` when src/, bench/ or the package files had uncommitted changes; null if unknown. */
  readonly commit: string | null;
  readonly command: string;
  readonly machine: Machine;
  readonly scenarios: readonly ScenarioFigures[];
  readonly peakRssMiB?: { readonly service?: number | undefined; readonly bare?: number | undefined } | undefined;
  /** Set when the record was not written by bench/run.ts: where its figures were copied from. */
  readonly transcribedFrom?: string | undefined;
}

/** What bench/run.ts hands over: its rows as it measured them. */
export interface MeasuredRow {
  readonly id: string;
  readonly title: string;
  readonly connections: number;
  readonly service: MeasuredFigures;
  readonly bare?: MeasuredFigures | undefined;
  readonly ceiling?: { readonly perSecond: number } | undefined;
  readonly atRest?: MeasuredFigures | undefined;
}

interface MeasuredFigures {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly failures: number;
  readonly cpuUs?: number;
}

const finite = (value: number | undefined): number | undefined => (value !== undefined && Number.isFinite(value) ? Math.round(value * 100) / 100 : undefined);

function figuresOf(measured: MeasuredFigures): Figures {
  return {
    perSecond: finite(measured.perSecond) ?? 0,
    p50Ms: finite(measured.p50) ?? 0,
    p99Ms: finite(measured.p99) ?? 0,
    cpuUsPerRequest: finite(measured.cpuUs),
    failures: measured.failures,
  };
}

/** The commit checked out where `directory` is, `+dirty` when the repository's src/, bench/ or package files changed. */
export function commitOf(directory: string): string | null {
  try {
    const run = (args: string[]) => execFileSync('git', args, { cwd: directory, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const hash = run(['rev-parse', '--short', 'HEAD']);
    // From the repository's top (`:/`): relative pathspecs would name bench/src, bench/bench… and never match.
    const codeChanged = run(['status', '--porcelain', '--untracked-files=no', '--', ':/src', ':/bench', ':/package.json', ':/package-lock.json']) !== '';
    return codeChanged ? `${hash}+dirty` : hash;
  } catch {
    return null;
  }
}

/** The commit measured: read when the run starts, before anything can be committed during it. */
const COMMIT_AT_START = commitOf(import.meta.dirname);

export function thisMachine(database: string): Machine {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    model: cpus[0]?.model.trim() ?? null,
    memoryMiB: Math.round(os.totalmem() / 2 ** 20),
    node: process.version,
    database,
    loadAverage: os.loadavg().map((load) => Math.round(load * 10) / 10),
  };
}

/** File name of a record: sortable by date, and naming the commit measured. */
export function recordFileName(record: Pick<BenchRecord, 'date' | 'commit'>): string {
  const stamp = record.date.replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');
  return `${stamp}-${(record.commit ?? 'unknown').replace(/\+/g, '-')}.json`;
}

/** Writes the run's record into bench/results/ and returns its path. */
export async function writeBenchRecord(options: {
  rows: readonly MeasuredRow[];
  database: string;
  peakRssMiB?: { service: number; bare: number } | undefined;
  /** What the figures owe to the machine's state (`--note`), kept in the record's machine. */
  note?: string | undefined;
  directory?: string;
}): Promise<string> {
  const record: BenchRecord = {
    format: 1,
    date: new Date().toISOString(),
    commit: COMMIT_AT_START,
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim().replace(/ --$/, ''),
    machine: { ...thisMachine(options.database), ...(options.note ? { note: options.note } : {}) },
    scenarios: options.rows.map((row) => ({
      id: row.title.startsWith('PGlite') ? 'pglite' : row.id,
      title: row.title,
      connections: row.connections,
      service: figuresOf(row.service),
      bare: row.bare && figuresOf(row.bare),
      serviceOverBare: row.bare?.cpuUs && row.service.cpuUs ? finite(row.service.cpuUs / row.bare.cpuUs) : undefined,
      ceilingPerSecond: finite(row.ceiling?.perSecond),
      atRest: row.atRest && figuresOf(row.atRest),
    })),
    peakRssMiB: options.peakRssMiB && { service: finite(options.peakRssMiB.service), bare: finite(options.peakRssMiB.bare) },
  };
  const directory = options.directory ?? RESULTS_DIR;
  await mkdir(directory, { recursive: true });
  const file = path.join(directory, recordFileName(record));
  await writeFile(file, `${JSON.stringify(record, null, 2)}\n`);
  return file;
}

/** Every record in the directory, oldest first. */
export async function readBenchRecords(directory = RESULTS_DIR): Promise<BenchRecord[]> {
  const names = (await readdir(directory)).filter((name) => name.endsWith('.json'));
  const records = await Promise.all(names.map(async (name) => JSON.parse(await readFile(path.join(directory, name), 'utf8')) as BenchRecord));
  return records.sort((a, b) => a.date.localeCompare(b.date));
}
