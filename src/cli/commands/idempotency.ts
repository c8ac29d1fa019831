import type { Command } from 'commander';
import { pruneIdempotencyKeys } from '../../ledger/idempotency-keys.js';
import { print, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

export function registerIdempotency(program: Command): void {
  const idempotency = program.command('idempotency').description("stored responses of HTTP writes' Idempotency-Keys");
  idempotency
    .command('prune')
    .description('delete expired stored responses (serve also does this every IDEMPOTENCY_PRUNE_INTERVAL_MS)')
    .option('--json', 'machine-readable output')
    .action(async (options: OutputOptions) => {
      const deleted = await withStore((store) => pruneIdempotencyKeys(store));
      print(options, { deleted }, `deleted ${deleted} expired idempotency ${deleted === 1 ? 'key' : 'keys'}`);
    });
}
