/** A steady stream of GETs against running nodes, tallying every answer by status. */
export interface LoadTarget {
  readonly name: string;
  readonly baseUrl: string;
  readonly paths: readonly string[];
  readonly authorization: string;
}

export interface LoadTally {
  /** Status code (or 'hang'/'error') → how many answers. */
  readonly byStatus: Map<number | 'hang' | 'error', number>;
  /** 503 answers that lacked a Retry-After header. */
  noRetryAfter: number;
}

export interface RunningLoad {
  readonly tallies: ReadonlyMap<string, LoadTally>;
  /** Stops sending and resolves once every request in flight has answered. */
  stop(): Promise<ReadonlyMap<string, LoadTally>>;
}

/** Starts `perTarget` sequential clients per target; each answer must come within `answerWithinMs`. */
export function startLoad(targets: readonly LoadTarget[], perTarget = 2, answerWithinMs = 10_000): RunningLoad {
  let running = true;
  const tallies = new Map<string, LoadTally>(targets.map((t) => [t.name, { byStatus: new Map(), noRetryAfter: 0 }]));
  const count = (tally: LoadTally, key: number | 'hang' | 'error') => tally.byStatus.set(key, (tally.byStatus.get(key) ?? 0) + 1);
  const client = async (target: LoadTarget, offset: number) => {
    const tally = tallies.get(target.name)!;
    for (let i = offset; running; i += 1) {
      const path = target.paths[i % target.paths.length]!;
      try {
        const response = await fetch(target.baseUrl + path, {
          headers: { authorization: target.authorization },
          signal: AbortSignal.timeout(answerWithinMs),
        });
        await response.arrayBuffer();
        count(tally, response.status);
        if (response.status === 503 && !response.headers.get('retry-after')) tally.noRetryAfter += 1;
      } catch (error) {
        count(tally, (error as Error).name === 'TimeoutError' ? 'hang' : 'error');
      }
    }
  };
  const clients = targets.flatMap((target) => Array.from({ length: perTarget }, (_, i) => client(target, i)));
  return {
    tallies,
    stop: async () => {
      running = false;
      await Promise.all(clients);
      return tallies;
    },
  };
}

/** The tally as a plain object, e.g. `{ 200: 812, 503: 40 }`, for readable assertions. */
export function statusCounts(tally: LoadTally | undefined): Record<string, number> {
  return Object.fromEntries([...(tally?.byStatus ?? new Map()).entries()].map(([status, n]) => [String(status), n]));
}

/** Answers other than 2xx/4xx. */
export function failures(tally: LoadTally | undefined): number {
  let n = 0;
  for (const [status, count] of tally?.byStatus ?? []) if (typeof status !== 'number' || status >= 500) n += count;
  return n;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it resolves true, or fails after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 30_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await sleep(100);
  }
}
