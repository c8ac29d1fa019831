import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../store/store.js';
import { pruneIdempotencyKeys } from './idempotency-keys.js';

/**
 * `serve` deletes expired idempotency keys every `intervalMs` (0: never).
 * Expired rows are already treated as absent, so pruning only keeps the
 * table small; a failure (database down, a standby's read-only database) is
 * logged and the next run tries again. Every worker of a cluster runs it:
 * the DELETE is harmless to repeat.
 */
export function scheduleIdempotencyPrune(store: Store, intervalMs: number, log: FastifyBaseLogger): { stop(): void } {
  if (intervalMs <= 0) return { stop: () => {} };
  const timer = setInterval(() => {
    pruneIdempotencyKeys(store).then(
      (deleted) => {
        if (deleted > 0) log.info({ deleted }, 'pruned expired idempotency keys');
      },
      (error: unknown) => log.warn({ err: error }, 'could not prune expired idempotency keys; will retry'),
    );
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
