/**
 * wrk as the harness's load generator. It runs outside Node and costs about
 * 15 µs of CPU per request against autocannon's 50 µs (measured on the 2-core
 * VM), CPU that would otherwise be taken from the service and PostgreSQL on
 * the same cores. wrk cannot call back into Node per request, so the paths are
 * drawn from `nextPath()` beforehand and cycled through by a Lua script.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { idempotencyKeyPrefix, type HttpLoad, type Measurement } from './http-load.js';

const run = promisify(execFile);

/** Distinct request paths drawn per run; wrk cycles through them. */
const PATHS = 20_000;
/** Marks the result line that the script's `done` prints among wrk's own output. */
const RESULT_KEY = 'lendingBenchWrk';

interface WrkResult {
  /** Responses received, including those with status ≥ 400. */
  readonly requests: number;
  /** Measured time, µs. */
  readonly duration: number;
  /** Latency percentiles, µs. */
  readonly p50: number;
  readonly p99: number;
  /** Responses with status ≥ 400. */
  readonly status: number;
  /** Connect, read, write and timeout errors plus `status`. */
  readonly failures: number;
  /** Writes only: responses other than 201 by status, and `error` for the transport errors. */
  readonly byStatus?: Record<string, number>;
}

let version: Promise<string | undefined> | undefined;

/** wrk's version line ("wrk 4.1.0 [epoll]"), or undefined when wrk is not on PATH. Checked once. */
export function wrkVersion(): Promise<string | undefined> {
  version ??= run('wrk', ['--version']).then(
    ({ stdout }) => firstLine(stdout),
    (error: unknown) => {
      // wrk prints its version, then its usage, and exits 1.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      const stdout = (error as { stdout?: unknown }).stdout;
      const line = typeof stdout === 'string' ? firstLine(stdout) : '';
      if (line.startsWith('wrk')) return line;
      throw error;
    },
  );
  return version;
}

/** Drives the service over HTTP with wrk (one thread); each request takes the next of 20,000 paths from `nextPath()`. */
export async function driveWrk(load: HttpLoad): Promise<Measurement> {
  // No load at all (e.g. --warmup 0).
  if (load.seconds === 0) return { requests: 0, perSecond: NaN, p50: NaN, p99: NaN, failures: 0 };
  if (!Number.isInteger(load.seconds) || load.seconds < 0) {
    throw new Error(`wrk runs for whole seconds, not ${load.seconds}; use --load-generator autocannon`);
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'lending-bench-wrk-'));
  try {
    const script = path.join(dir, 'load.lua');
    await writeFile(script, luaScript(load));
    const { stdout } = await run(
      'wrk',
      ['-t1', `-c${load.connections}`, `-d${load.seconds}s`, '--timeout', '10s', '-s', script, load.url],
      { timeout: (load.seconds + 60) * 1000, maxBuffer: 16 * 1024 * 1024 },
    );
    const result = parseResult(stdout);
    const successful = Math.max(0, result.requests - result.status);
    const ms = (us: number) => (successful === 0 ? NaN : us / 1000);
    return {
      requests: successful,
      perSecond: successful / (result.duration / 1e6),
      p50: ms(result.p50),
      p99: ms(result.p99),
      failures: result.failures,
      ...(result.byStatus ? { failuresByStatus: result.byStatus } : {}),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function luaScript(load: HttpLoad): string {
  const paths = Array.from({ length: PATHS }, () => `  ${luaString(load.nextPath())},`);
  const headers = Object.entries(load.headers).map(([name, value]) => `wrk.headers[${luaString(name)}] = ${luaString(value)}`);
  return [
    // Top level: every wrk thread runs the script in its own Lua state, so each has the paths and its own counter.
    ...headers,
    'local paths = {',
    ...paths,
    '}',
    'local count = #paths',
    'local index = 0',
    ...(load.postBody === undefined ? getRequest() : postRequest(load.postBody)),
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  local failures = e.connect + e.read + e.write + e.status + e.timeout',
    ...(load.postBody === undefined ? ['  local byStatus = ""'] : statusCounts()),
    '  io.write(string.format(',
    `    '\\n{"${RESULT_KEY}":true,"requests":%d,"duration":%d,"p50":%d,"p99":%d,"status":%d,"failures":%d%s}\\n',`,
    '    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.status, failures, byStatus))',
    'end',
    '',
  ].join('\n');
}

function getRequest(): string[] {
  return ['request = function()', '  index = index % count + 1', "  return wrk.format('GET', paths[index])", 'end'];
}

/**
 * POSTs of `body`, each with an Idempotency-Key never sent before (this run's
 * prefix and a counter), and a count of the answers by status: `response`
 * runs in each thread's Lua state, `done` reads the counts through `setup`'s
 * thread handles.
 */
function postRequest(body: string): string[] {
  return [
    `local prefix = ${luaString(idempotencyKeyPrefix())}`,
    'local sent = 0',
    'local threads = {}',
    'setup = function(thread)',
    '  thread:set("id", #threads + 1)',
    '  table.insert(threads, thread)',
    'end',
    'statuses = {}',
    'request = function()',
    '  index = index % count + 1',
    '  sent = sent + 1',
    '  local headers = {}',
    '  for name, value in pairs(wrk.headers) do headers[name] = value end',
    '  headers["Content-Type"] = "application/json"',
    '  headers["Idempotency-Key"] = prefix .. "-" .. id .. "-" .. sent',
    `  return wrk.format('POST', paths[index], headers, ${luaString(body)})`,
    'end',
    'response = function(status, headers, body)',
    '  if status ~= 201 then statuses[status] = (statuses[status] or 0) + 1 end',
    'end',
  ];
}

/** `,"byStatus":{"409":3,"error":1}` from every thread's counts. */
function statusCounts(): string[] {
  return [
    '  local totals = {}',
    '  for _, thread in ipairs(threads) do',
    '    for status, n in pairs(thread:get("statuses")) do totals[status] = (totals[status] or 0) + n end',
    '  end',
    '  local parts = {}',
    '  for status, n in pairs(totals) do table.insert(parts, string.format(\'"%d":%d\', status, n)) end',
    '  local transport = e.connect + e.read + e.write + e.timeout',
    '  if transport > 0 then table.insert(parts, string.format(\'"error":%d\', transport)) end',
    '  local byStatus = \',"byStatus":{\' .. table.concat(parts, ",") .. "}"',
  ];
}

/** A Lua string literal: printable ASCII as is, everything else (and quote, backslash) as decimal byte escapes. */
function luaString(value: string): string {
  let literal = '"';
  for (const byte of Buffer.from(value, 'utf8')) {
    literal += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\${String(byte).padStart(3, '0')}`;
  }
  return `${literal}"`;
}

function parseResult(stdout: string): WrkResult {
  const line = stdout.split('\n').find((candidate) => candidate.startsWith(`{"${RESULT_KEY}"`));
  if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
  return JSON.parse(line) as WrkResult;
}

function firstLine(text: string): string {
  // "wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer"
  return (text.split('\n')[0] ?? '').replace(/\s+Copyright.*$/, '').trim();
}
