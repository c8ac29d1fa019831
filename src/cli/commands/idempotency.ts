import { pruneIdempotencyKeys } from '../../ledger/idempotency-keys.js';
import { print, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

/** `idempotency prune`: deletes expired stored answers of HTTP writes. */
export async function runIdempotencyPrune(options: OutputOptions): Promise<void> {
  const deleted = await withStore((store) => pruneIdempotencyKeys(store));
  print(options, { deleted }, `deleted ${deleted} expired idempotency ${deleted === 1 ? 'key' : 'keys'}`);
}
