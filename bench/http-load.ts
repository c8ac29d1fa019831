/* What a load generator is given and what it measures: shared by autocannon (measure.ts) and wrk (wrk.ts). */

export interface Measurement {
  readonly requests: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** Responses other than 200 (201 for a write), and transport errors. */
  readonly failures: number;
  /** Those failures by status (`"409": 3`), transport errors as `"error"`; measured for writes only. */
  readonly failuresByStatus?: Readonly<Record<string, number>> | undefined;
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
  /** A write: each request POSTs this JSON body with an Idempotency-Key never sent before; success is 201. */
  readonly postBody?: string | undefined;
}

/** A prefix no earlier run used, for the Idempotency-Keys of one run: `<prefix>-<n>`. */
export function idempotencyKeyPrefix(): string {
  return `bench-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}
