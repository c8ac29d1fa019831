import type { Store } from '../store/store.js';
import { recordAttempt, recordAttempts, type AttemptToRecord, type RecordedAttempt } from './delivery-record.js';

/** How long a finished attempt waits for others to share its commit. */
export const RECORD_WAIT_MS = 5;
/** The most attempts one commit records. */
export const RECORD_BATCH = 32;

interface Queued extends AttemptToRecord {
  resolve(recorded: RecordedAttempt): void;
  reject(error: unknown): void;
}

/**
 * Records the attempts a node finishes together, a few milliseconds apart,
 * in one transaction: at hundreds of deliveries a second, one commit per
 * delivery would cost more than the delivery. If a shared commit fails, each
 * attempt is tried alone, so one that cannot be recorded holds back no other.
 */
export class AttemptRecorder {
  private queue: Queued[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly flushing = new Set<Promise<void>>();

  constructor(private readonly store: Store) {}

  record(attempt: AttemptToRecord): Promise<RecordedAttempt> {
    return new Promise((resolve, reject) => {
      this.queue.push({ ...attempt, resolve, reject });
      if (this.queue.length >= RECORD_BATCH) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), RECORD_WAIT_MS);
    });
  }

  /** Records what is queued now, and waits for every commit under way. */
  async drain(): Promise<void> {
    this.flush();
    while (this.flushing.size > 0) await Promise.all([...this.flushing]);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.queue.splice(0);
    if (batch.length === 0) return;
    const done = this.commit(batch).finally(() => this.flushing.delete(done));
    this.flushing.add(done);
  }

  private async commit(batch: readonly Queued[]): Promise<void> {
    try {
      const recorded = await recordAttempts(this.store, batch);
      batch.forEach((attempt, i) => attempt.resolve(recorded[i]!));
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
      for (const attempt of batch) {
        await recordAttempt(this.store, attempt.claim, attempt.result, attempt.options).then(attempt.resolve, attempt.reject);
      }
    }
  }
}
