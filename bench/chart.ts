/**
 * `npm run bench:chart`: draws the trend of the benchmark's main figures from
 * every record in bench/results/ (written by `npm run bench`) into
 * docs/bench-trend.svg — a hand-written SVG, one panel per figure, one point
 * per run that measured it (the scenario at 16 connections where a run had
 * several counts).
 *
 *   npm run bench:chart -- [--out docs/bench-trend.svg] [--results bench/results]
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readBenchRecords, RESULTS_DIR, type BenchRecord, type ScenarioFigures } from './results-record.js';

const { values: args } = parseArgs({
  options: {
    out: { type: 'string', default: path.join(import.meta.dirname, '..', 'docs', 'bench-trend.svg') },
    results: { type: 'string', default: RESULTS_DIR },
  },
});

interface Series {
  readonly label: string;
  readonly color: string;
  readonly value: (record: BenchRecord) => number | undefined;
}

interface Panel {
  readonly title: string;
  readonly series: readonly Series[];
  /** A horizontal line: the target. */
  readonly target?: { readonly value: number; readonly label: string };
}

/** The scenario's row at 16 connections, else its first row. */
function rowOf(record: BenchRecord, id: string): ScenarioFigures | undefined {
  const rows = record.scenarios.filter((row) => row.id === id);
  return rows.find((row) => row.connections === 16) ?? rows[0];
}

const cpu = (id: string) => (record: BenchRecord) => rowOf(record, id)?.service.cpuUsPerRequest;
const ratio = (id: string) => (record: BenchRecord) => rowOf(record, id)?.serviceOverBare;
const rate = (id: string) => (record: BenchRecord) => rowOf(record, id)?.service.perSecond;

const COLORS = { a: '#1f77b4', b: '#ff7f0e', c: '#2ca02c', w1: '#d62728', w2: '#9467bd' };

const PANELS: readonly Panel[] = [
  {
    title: 'Reads: service CPU µs per request',
    series: [
      { label: '(a) methods by entity + currency', color: COLORS.a, value: cpu('a') },
      { label: '(b) limits by entity', color: COLORS.b, value: cpu('b') },
      { label: '(c) page 1 with its exact count', color: COLORS.c, value: cpu('c') },
    ],
    target: { value: 130, label: 'target ≤ 130 µs' },
  },
  {
    title: 'Reads: service CPU per request ÷ the bare handler’s',
    series: [
      { label: '(a)', color: COLORS.a, value: ratio('a') },
      { label: '(b)', color: COLORS.b, value: ratio('b') },
      { label: '(c)', color: COLORS.c, value: ratio('c') },
    ],
    target: { value: 1.3, label: 'target ≤ 1.3×' },
  },
  {
    title: 'Writes: service CPU µs per drawdown',
    series: [
      { label: '(w1) over 1,000 limits', color: COLORS.w1, value: cpu('w1') },
      { label: '(w2) one hot limit', color: COLORS.w2, value: cpu('w2') },
    ],
    target: { value: 200, label: 'target ≤ 200 µs' },
  },
  {
    title: 'Writes: drawdowns per second',
    series: [
      { label: '(w1)', color: COLORS.w1, value: rate('w1') },
      { label: '(w2)', color: COLORS.w2, value: rate('w2') },
    ],
    target: { value: 2000, label: 'w1 target ≥ 2,000/s' },
  },
];

const WIDTH = 960;
const LEFT = 70;
const RIGHT = 230;
const PANEL_HEIGHT = 170;
const PANEL_GAP = 50;
const TOP = 90;
const BOTTOM = 120;

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A round step that gives about four gridlines over the range. */
function gridStep(max: number): number {
  const rough = max / 4;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 2.5, 5, 10].map((factor) => factor * magnitude).find((step) => step >= rough) ?? rough;
}

export function renderTrendChart(records: readonly BenchRecord[]): string {
  const plotWidth = WIDTH - LEFT - RIGHT;
  const height = TOP + PANELS.length * (PANEL_HEIGHT + PANEL_GAP) - PANEL_GAP + BOTTOM;
  const xOf = (index: number) => LEFT + (records.length <= 1 ? plotWidth / 2 : (index * plotWidth) / (records.length - 1));
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="${LEFT}" y="24" font-size="16" font-weight="bold">lending-api benchmark: main figures per run (npm run bench, 16 connections)</text>`,
    `<text x="${LEFT}" y="44" fill="#555">Drawn from bench/results/*.json by npm run bench:chart. Runs before 2026-11-28 were transcribed from earlier docs.</text>`,
    `<text x="${LEFT}" y="60" fill="#555">The VM changed between runs (each record names its machine): compare ratios across runs, absolute figures within one.</text>`,
  ];
  PANELS.forEach((panel, panelIndex) => {
    const top = TOP + panelIndex * (PANEL_HEIGHT + PANEL_GAP);
    const bottom = top + PANEL_HEIGHT;
    const values = panel.series.flatMap((series) => records.map(series.value)).filter((value): value is number => value !== undefined);
    const max = Math.max(...values, panel.target?.value ?? 0) * 1.1 || 1;
    const yOf = (value: number) => bottom - (value / max) * PANEL_HEIGHT;
    out.push(`<text x="${LEFT}" y="${top - 8}" font-weight="bold">${escape(panel.title)}</text>`);
    const step = gridStep(max);
    for (let tick = 0; tick <= max; tick += step) {
      const y = yOf(tick).toFixed(1);
      out.push(`<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y}" y2="${y}" stroke="#e5e5e5"/>`);
      out.push(`<text x="${LEFT - 6}" y="${y}" text-anchor="end" dominant-baseline="middle" fill="#555">${Number(tick.toPrecision(6)).toLocaleString('en-US')}</text>`);
    }
    out.push(`<rect x="${LEFT}" y="${top}" width="${plotWidth}" height="${PANEL_HEIGHT}" fill="none" stroke="#999"/>`);
    if (panel.target) {
      const y = yOf(panel.target.value).toFixed(1);
      const legendY = top + 16 + panel.series.length * 18 + 22;
      out.push(`<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y}" y2="${y}" stroke="#333" stroke-dasharray="6 4"/>`);
      out.push(`<line x1="${LEFT + plotWidth + 8}" x2="${LEFT + plotWidth + 26}" y1="${legendY}" y2="${legendY}" stroke="#333" stroke-dasharray="6 4"/>`);
      out.push(`<text x="${LEFT + plotWidth + 32}" y="${legendY}" dominant-baseline="middle" fill="#333">${escape(panel.target.label)}</text>`);
    }
    panel.series.forEach((series, seriesIndex) => {
      const points = records.flatMap((record, index) => {
        const value = series.value(record);
        return value === undefined ? [] : [[xOf(index), yOf(value), value] as const];
      });
      if (points.length > 1) {
        out.push(`<polyline fill="none" stroke="${series.color}" stroke-width="2" points="${points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ')}"/>`);
      }
      for (const [x, y, value] of points) {
        out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3.5" fill="${series.color}"><title>${escape(`${series.label}: ${value}`)}</title></circle>`);
      }
      const legendY = top + 16 + seriesIndex * 18;
      out.push(`<line x1="${LEFT + plotWidth + 8}" x2="${LEFT + plotWidth + 26}" y1="${legendY + 22}" y2="${legendY + 22}" stroke="${series.color}" stroke-width="3"/>`);
      out.push(`<text x="${LEFT + plotWidth + 32}" y="${legendY + 22}" dominant-baseline="middle">${escape(series.label)}</text>`);
    });
  });
  const axisY = TOP + PANELS.length * (PANEL_HEIGHT + PANEL_GAP) - PANEL_GAP;
  records.forEach((record, index) => {
    const x = xOf(index).toFixed(1);
    const label = `${record.date.slice(0, 16).replace('T', ' ')} ${record.commit ?? ''}`.trim();
    out.push(`<text transform="translate(${x},${axisY + 10}) rotate(45)" fill="#333">${escape(label)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

async function main(): Promise<void> {
  const records = await readBenchRecords(args.results);
  if (records.length === 0) throw new Error(`no records in ${args.results}: run npm run bench first`);
  await writeFile(args.out, renderTrendChart(records));
  process.stderr.write(`bench:chart: ${records.length} runs drawn into ${args.out}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:chart: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
