import type { Command } from 'commander';
import { createApiKey, listApiKeys, revokeApiKey } from '../../auth/organizations.js';
import { formatMicros, parseTimestamp } from '../../listing/timestamp.js';
import { print, UsageError, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

export function registerKey(program: Command): void {
  const key = program.command('key').description('manage API keys (several may be active at once, for rotation)');
  key
    .command('create')
    .description('create an API key; it is printed once and never stored')
    .requiredOption('--org <org>', 'organization ID')
    .option('--expires <at>', 'expiry: an ISO 8601 timestamp or a date (that day 00:00 UTC)')
    .option('--json', 'machine-readable output')
    .action(async (options: OutputOptions & { org: string; expires?: string }) => {
      const expiresAt = options.expires === undefined ? undefined : parseExpiry(options.expires);
      const created = await withStore((store) => createApiKey(store, options.org, expiresAt));
      print(
        options,
        { id: created.id, org: created.org, key: created.key, expires_at: created.expires_at },
        [
          `created API key ${created.id} for ${created.org}${created.expires_at ? ` (expires ${created.expires_at})` : ''}`,
          `key: ${created.key}`,
          'store it now: it cannot be shown again',
        ].join('\n'),
      );
    });
  key
    .command('list')
    .description("list an organization's keys (ids and status, never the keys)")
    .requiredOption('--org <org>', 'organization ID')
    .option('--json', 'machine-readable output')
    .action(async (options: OutputOptions & { org: string }) => {
      const keys = await withStore((store) => listApiKeys(store, options.org));
      const lines = keys.map(
        (k) => `${k.id}  ${k.status.padEnd(7)}  created ${k.created_at}${k.expires_at ? `  expires ${k.expires_at}` : ''}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`,
      );
      print(options, keys, lines.length > 0 ? lines.join('\n') : `no keys for ${options.org}`);
    });
  key
    .command('revoke')
    .description('revoke an API key at once')
    .argument('<id>', 'key id (key_…)')
    .option('--json', 'machine-readable output')
    .action(async (id: string, options: OutputOptions) => {
      const revoked = await withStore((store) => revokeApiKey(store, id));
      print(options, revoked, `revoked ${revoked.id} of ${revoked.org} at ${revoked.revoked_at}`);
    });
}

function parseExpiry(raw: string): string {
  const parsed = parseTimestamp(raw, 'from');
  if (!parsed.ok) throw new UsageError(`--expires ${parsed.reason}, got '${raw}'`);
  return formatMicros(parsed.micros);
}
