/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`, e.g. from `npm run bench --
 * --profile DIR`): where the process's busy time went, by package or source
 * file (self time), and the functions with the most self and inclusive time.
 * Shares are of the busy samples (idle and the profiler's own excluded); with
 * `--us-per-request N` (the bench's CPU µs/req for the profiled load) each is
 * also given in µs per request.
 *
 *   node --import tsx bench/profile-summary.ts FILE.cpuprofile [--top 25] [--skip SECONDS] [--us-per-request 250]
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const NOT_BUSY = new Set(['(idle)']);

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' }, 'us-per-request': { type: 'string' }, skip: { type: 'string', default: '0' } },
});
const file = positionals[0];
if (!file) throw new Error('usage: profile-summary.ts FILE.cpuprofile [--top N] [--us-per-request N]');
const top = Number(options.top);
/** Samples in the first SKIP seconds (start-up, warm-up) are left out. */
const skipMicros = Number(options.skip) * 1e6;
const usPerRequest = options['us-per-request'] === undefined ? undefined : Number(options['us-per-request']);

const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfMicros = new Map<number, number>();
let elapsed = 0;
profile.samples.forEach((id, index) => {
  const delta = profile.timeDeltas[index] ?? 0;
  elapsed += delta;
  if (elapsed >= skipMicros) selfMicros.set(id, (selfMicros.get(id) ?? 0) + delta);
});

const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

const functionKey = (frame: CallFrame) => `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;

let busy = 0;
let idle = 0;
const selfByFunction = new Map<string, number>();
const selfByArea = new Map<string, number>();
const inclusiveByFunction = new Map<string, number>();
for (const [id, micros] of selfMicros) {
  const node = byId.get(id);
  if (!node) continue;
  if (NOT_BUSY.has(node.callFrame.functionName)) {
    idle += micros;
    continue;
  }
  busy += micros;
  add(selfByFunction, functionKey(node.callFrame), micros);
  add(selfByArea, areaOf(node.callFrame), micros);
  // Inclusive: every distinct function on the sample's stack, once.
  const seen = new Set<string>();
  for (let current: number | undefined = id; current !== undefined; current = parentOf.get(current)) {
    const frame = byId.get(current)?.callFrame;
    if (!frame || frame.functionName === '(root)') continue;
    const key = functionKey(frame);
    if (seen.has(key)) continue;
    seen.add(key);
    add(inclusiveByFunction, key, micros);
  }
}

const share = (micros: number) => {
  const percent = `${((micros / busy) * 100).toFixed(1)}%`.padStart(6);
  return usPerRequest === undefined ? percent : `${percent} ${((micros / busy) * usPerRequest).toFixed(1).padStart(6)} µs/req`;
};
const list = (title: string, map: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [key, micros] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${share(micros)}  ${key}\n`);
};
process.stdout.write(`${file}: busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s ("(program)" is V8's name for time outside JavaScript it cannot attribute)\n`);
list('Self time by package or file', selfByArea);
list('Self time by function', selfByFunction);
list('Inclusive time by function', inclusiveByFunction);

function add(map: Map<string, number>, key: string, micros: number): void {
  map.set(key, (map.get(key) ?? 0) + micros);
}

/** `fastify`, `pg`, `src/listing/sql.js`, `node:internal/http…`, or `(native)` for V8 builtins and C++. */
function areaOf(frame: CallFrame): string {
  if (!frame.url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(frame.url);
  if (packageMatch?.[1]) return packageMatch[1];
  if (frame.url.startsWith('node:')) return frame.url.split('/').slice(0, 2).join('/');
  return shortUrl(frame.url);
}

function shortUrl(url: string): string {
  if (url.includes('/node_modules/')) return url.replace(/^.*\/node_modules\//, '');
  const inProject = /\/(dist|src|bench)\/(.*)$/.exec(url);
  return inProject ? `${inProject[1]}/${inProject[2]}` : url;
}
