import { performance } from 'node:perf_hooks';

/**
 * The load an operator's loan system puts on the nodes during a fault:
 * writers that retry every unanswered drawdown with its Idempotency-Key
 * until it is answered, readers of credit limits on the node on the
 * synchronous standby (checked against what was acknowledged before each
 * read started), and readers of payment methods on the node on the replicas.
 */
export interface LoadTargets {
  readonly writeUrl: string;
  readonly limitReadUrl: string;
  readonly replicaReadUrl: string;
  readonly authorization: string;
  /** One limit per writer. */
  readonly limitUids: readonly string[];
}

export interface PhaseTally {
  /** Status (0: no answer, the connection failed) → count, per node. */
  readonly statuses: Record<'W' | 'S' | 'R', Map<number, number>>;
  /** Keys acknowledged (201) per limit uid, with their entry ids. */
  readonly acknowledged: Map<string, Map<string, string>>;
  /** Times (performance.now) of every 201. */
  readonly acknowledgedAt: number[];
  /** Limit reads on S that showed less outstanding than was acknowledged before they started. */
  stale: number;
  limitReads: number;
  /** Answers of a kind no client should get (e.g. a 4xx on a valid drawdown), with their bodies. */
  readonly unexpected: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function send(url: string, init: RequestInit): Promise<{ status: number; body: string }> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
    return { status: response.status, body: await response.text() };
  } catch {
    return { status: 0, body: '' };
  }
}

export interface RunningLoad {
  readonly tally: PhaseTally;
  /** Stops: every writer finishes the drawdown it is on (answered), readers stop. */
  stop(): Promise<PhaseTally>;
}

export function startLoad(targets: LoadTargets, phase: string, readersPerNode = 2): RunningLoad {
  const tally: PhaseTally = {
    statuses: { W: new Map(), S: new Map(), R: new Map() },
    acknowledged: new Map(targets.limitUids.map((uid) => [uid, new Map()])),
    acknowledgedAt: [],
    stale: 0,
    limitReads: 0,
    unexpected: [],
  };
  const count = (node: 'W' | 'S' | 'R', status: number) => tally.statuses[node].set(status, (tally.statuses[node].get(status) ?? 0) + 1);
  let running = true;
  const headers = { authorization: targets.authorization };

  const writer = async (uid: string) => {
    const acknowledged = tally.acknowledged.get(uid)!;
    for (let n = 0; running && n < 1_000_000; n += 1) {
      const key = `${phase}-${uid}-${n}`;
      // The same key until the write is answered: a 503 (nothing ran), a 504 outcome_unknown (it may have
      // committed: the same key replays it or records it once) or no answer is retried, as the SDK does.
      for (let attempt = 0; attempt < 1000; attempt += 1) {
        const { status, body } = await send(`${targets.writeUrl}/api/limits/${uid}/drawdowns/`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ amount: '1.00' }),
        });
        count('W', status);
        if (status === 201) {
          acknowledged.set(key, (JSON.parse(body) as { entry: { id: string } }).entry.id);
          tally.acknowledgedAt.push(performance.now());
          break;
        }
        if (status !== 0 && status !== 503 && status !== 504 && status !== 409) {
          tally.unexpected.push(`W ${status} ${body.slice(0, 300)}`);
          break;
        }
        await sleep(100);
      }
    }
  };

  const limitReader = async (offset: number) => {
    for (let i = offset; running; i += 1) {
      const uid = targets.limitUids[i % targets.limitUids.length]!;
      const floor = tally.acknowledged.get(uid)!.size;
      const { status, body } = await send(`${targets.limitReadUrl}/api/limits/${uid}/`, { headers });
      count('S', status);
      if (status === 200) {
        tally.limitReads += 1;
        // Each acknowledged drawdown of this phase adds 1.00; earlier phases' are counted in the base.
        const outstanding = (JSON.parse(body) as { outstanding: number }).outstanding;
        if (outstanding < (baseOutstanding.get(uid) ?? 0) + floor) tally.stale += 1;
      } else if (status !== 503 && status !== 0) {
        tally.unexpected.push(`S ${status} ${body.slice(0, 300)}`);
      } else {
        await sleep(50);
      }
    }
  };

  const replicaReader = async () => {
    while (running) {
      const { status, body } = await send(`${targets.replicaReadUrl}/api/methods/`, { headers });
      count('R', status);
      if (status !== 200) {
        if (status !== 503 && status !== 0) tally.unexpected.push(`R ${status} ${body.slice(0, 300)}`);
        await sleep(50);
      }
    }
  };

  const baseOutstanding = new Map<string, number>();
  const started = (async () => {
    // Where each limit stands before this phase (read on the leader's node, which always answers limits).
    for (const uid of targets.limitUids) {
      const { status, body } = await send(`${targets.writeUrl}/api/limits/${uid}/`, { headers });
      if (status !== 200) throw new Error(`limit ${uid} on W: ${status} ${body}`);
      baseOutstanding.set(uid, (JSON.parse(body) as { outstanding: number }).outstanding);
    }
    return Promise.all([
      ...targets.limitUids.map((uid) => writer(uid)),
      ...Array.from({ length: readersPerNode }, (_, i) => limitReader(i)),
      ...Array.from({ length: readersPerNode }, () => replicaReader()),
    ]);
  })();

  return {
    tally,
    stop: async () => {
      running = false;
      await started;
      return tally;
    },
  };
}

/** The longest time between two consecutive acknowledged writes: the write outage a client saw. */
export function longestWriteGapMs(tally: PhaseTally, from: number): number {
  const times = [from, ...tally.acknowledgedAt.filter((t) => t >= from)].sort((a, b) => a - b);
  let longest = 0;
  for (let i = 1; i < times.length; i += 1) longest = Math.max(longest, times[i]! - times[i - 1]!);
  return longest;
}

export function statusSummary(statuses: Map<number, number>): string {
  return [...statuses.entries()]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${n} × ${status === 0 ? 'no answer' : status}`)
    .join(', ');
}
