/**
 * One logical drawdown as a lender's loan system sends it during a burst:
 * its own Idempotency-Key and reference (the same on every retry, so the
 * ledger tells whether it ran), and what each attempt was answered.
 */
export interface LogicalWrite {
  readonly key: string;
  readonly reference: string;
  readonly limitUid: string;
  readonly amount: string;
}

/** An attempt's outcome: the status and problem code, or no answer at all (status 0: the connection failed). */
export interface Answer {
  readonly status: number;
  readonly code?: string | undefined;
  readonly replayed: boolean;
  /** The entry the 201 (or its replay) reports. */
  readonly entryId?: string | undefined;
  readonly ms: number;
}

/** How long an attempt may take before the client gives up on it (as a loan system's HTTP client would). */
const ATTEMPT_TIMEOUT_MS = 30_000;

export function bodyOf(write: LogicalWrite): string {
  return JSON.stringify({ amount: write.amount, reference: write.reference });
}

/** POSTs the drawdown to the service at `baseUrl`; never rejects. */
export async function postDrawdown(baseUrl: string, authorization: string, write: LogicalWrite): Promise<Answer> {
  const started = performance.now();
  // A timer of our own (AbortSignal.timeout's does not keep the process alive while the attempt waits).
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), ATTEMPT_TIMEOUT_MS);
  try {
    const response = await fetch(`${baseUrl}/api/limits/${encodeURIComponent(write.limitUid)}/drawdowns/`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', 'idempotency-key': write.key },
      body: bodyOf(write),
      signal: abort.signal,
    });
    const text = await response.text();
    const parsed = parseJson(text);
    return {
      status: response.status,
      code: typeof parsed?.code === 'string' ? parsed.code : undefined,
      replayed: response.headers.get('idempotent-replayed') === 'true',
      entryId: typeof parsed?.entry === 'object' && parsed.entry !== null ? String((parsed.entry as { id?: unknown }).id) : undefined,
      ms: performance.now() - started,
    };
  } catch {
    return { status: 0, replayed: false, ms: performance.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The counts the issue asks for: 201, replay, 409 and 503 by code, and the rest by status (0: no answer). */
export function tally(answers: readonly Answer[]): string {
  const counts = new Map<string, number>();
  const add = (label: string) => counts.set(label, (counts.get(label) ?? 0) + 1);
  for (const answer of answers) {
    if (answer.status === 201 && !answer.replayed) add('201');
    else if (answer.replayed) add(`replay ${answer.status}`);
    else if (answer.status === 409 || answer.status === 503) add(`${answer.status} ${answer.code ?? '?'}`);
    else if (answer.status === 0) add('no answer');
    else add(`${answer.status} ${answer.code ?? ''}`.trim());
  }
  const order = (label: string) => (label === '201' ? 0 : label.startsWith('replay') ? 1 : label.startsWith('409') ? 2 : label.startsWith('503') ? 3 : 4);
  return [...counts]
    .sort(([a], [b]) => order(a) - order(b) || a.localeCompare(b))
    .map(([label, n]) => `${label} ×${n}`)
    .join(', ');
}

/** Whether an answer says the write ran nothing, as docs/api.md promises for these codes. */
export function saysNothingRan(answer: Answer): boolean {
  return answer.status === 503 && (answer.code === 'service_unavailable' || answer.code === 'overloaded');
}

/**
 * Whether an answer tells the client the write is done — recorded, or
 * refused for good (a 4xx) — so that it need not send it again. No answer,
 * a 5xx (503, 504 outcome_unknown), a 429 and a 409 idempotency_key_in_use
 * are retried with the same key.
 */
export function isFinal(answer: Answer): boolean {
  if (answer.status === 0 || answer.status >= 500 || answer.status === 429) return false;
  return !(answer.status === 409 && answer.code === 'idempotency_key_in_use');
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}
