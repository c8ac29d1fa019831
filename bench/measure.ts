import autocannon from 'autocannon';
import { driveWrk, wrkVersion } from './wrk.js';

export interface Measurement {
  readonly requests: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** Responses other than 200, and transport errors. */
  readonly failures: number;
}

/** Latency percentiles (ms) from every recorded sample. */
export function summarize(latencies: number[], seconds: number, failures: number): Measurement {
  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) => (sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN));
  return { requests: sorted.length, perSecond: sorted.length / seconds, p50: at(0.5), p99: at(0.99), failures };
}

export interface HttpLoad {
  readonly url: string;
  readonly headers: Record<string, string>;
  /** Path and query of the next request. */
  readonly nextPath: () => string;
  readonly connections: number;
  readonly seconds: number;
}

/** Drives the service over HTTP with autocannon; every request gets a fresh path. */
export async function driveHttp(load: HttpLoad): Promise<Measurement> {
  const latencies: number[] = [];
  let failures = 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: load.url,
        connections: load.connections,
        duration: load.seconds,
        headers: load.headers,
        requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: load.nextPath() }) }],
      },
      (error, result) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(result)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode === 200) latencies.push(responseTime);
      else failures++;
    });
  });
  return summarize(latencies, load.seconds, failures + result.errors + result.timeouts);
}

export type LoadGeneratorChoice = 'wrk' | 'autocannon' | 'auto';

export interface LoadGenerator {
  readonly name: 'wrk' | 'autocannon';
  /** For reports: "wrk 4.1.0 [epoll]" or "autocannon (in the harness process)". */
  readonly description: string;
  readonly drive: (load: HttpLoad) => Promise<Measurement>;
}

/**
 * The HTTP load generator: wrk when it is on PATH (it needs about a third of
 * autocannon's CPU per request, CPU the service would otherwise lose on a
 * shared machine), else autocannon; `wrk` or `autocannon` forces one.
 */
export async function chooseLoadGenerator(choice: LoadGeneratorChoice = 'auto'): Promise<LoadGenerator> {
  const autocannonGenerator: LoadGenerator = { name: 'autocannon', description: 'autocannon (in the harness process)', drive: driveHttp };
  if (choice === 'autocannon') return autocannonGenerator;
  const version = await wrkVersion();
  if (version !== undefined) return { name: 'wrk', description: version, drive: driveWrk };
  if (choice === 'wrk') throw new Error('wrk is not on PATH (apt-get install wrk), or use --load-generator autocannon');
  return autocannonGenerator;
}

/** Runs `operation` from `concurrency` loops for `seconds`, timing each call. */
export async function driveDirect(operation: () => Promise<unknown>, concurrency: number, seconds: number): Promise<Measurement> {
  const latencies: number[] = [];
  let failures = 0;
  const deadline = performance.now() + seconds * 1000;
  const loop = async () => {
    while (performance.now() < deadline) {
      const start = performance.now();
      try {
        await operation();
        latencies.push(performance.now() - start);
      } catch {
        failures++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return summarize(latencies, seconds, failures);
}
