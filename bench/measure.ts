import autocannon from 'autocannon';
import { idempotencyKeyPrefix, summarize, type HttpLoad, type Measurement } from './http-load.js';
import { driveWrk, wrkVersion } from './wrk.js';

export { idempotencyKeyPrefix, summarize, type HttpLoad, type Measurement } from './http-load.js';

/** Drives the service over HTTP with autocannon; every request gets a fresh path. */
export async function driveHttp(load: HttpLoad): Promise<Measurement> {
  const latencies: number[] = [];
  let failures = 0;
  const byStatus: Record<string, number> = {};
  const { postBody } = load;
  const prefix = idempotencyKeyPrefix();
  let sent = 0;
  const request: autocannon.Request =
    postBody === undefined
      ? { method: 'GET', setupRequest: (request) => ({ ...request, path: load.nextPath() }) }
      : {
          method: 'POST',
          setupRequest: (request) => ({
            ...request,
            path: load.nextPath(),
            body: postBody,
            headers: { ...load.headers, 'content-type': 'application/json', 'idempotency-key': `${prefix}-${++sent}` },
          }),
        };
  const success = postBody === undefined ? 200 : 201;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      { url: load.url, connections: load.connections, duration: load.seconds, headers: load.headers, requests: [request] },
      (error, result) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(result)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode === success) {
        latencies.push(responseTime);
        return;
      }
      failures++;
      byStatus[statusCode] = (byStatus[statusCode] ?? 0) + 1;
    });
  });
  const transport = result.errors + result.timeouts;
  if (transport > 0) byStatus.error = transport;
  const measured = summarize(latencies, load.seconds, failures + transport);
  return postBody === undefined ? measured : { ...measured, failuresByStatus: byStatus };
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
