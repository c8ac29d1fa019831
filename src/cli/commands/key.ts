import { keyIdOf } from '../../auth/api-key-format.js';
import { KEY_SCOPES, isKeyScope, type KeyScope } from '../../auth/key-scope.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../../auth/api-keys.js';
import { formatMicros, parseTimestamp } from '../../domain/timestamp.js';
import { print, UsageError, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

/** `key create`: mints a key and prints it, the only time it is shown. */
export async function runKeyCreate(options: OutputOptions & { org: string; expires?: string; scope: string }): Promise<void> {
  const expiresAt = options.expires === undefined ? undefined : parseExpiry(options.expires);
  const scope = parseScope(options.scope);
  const created = await withStore((store) => createApiKey(store, options.org, expiresAt, scope));
  print(
    options,
    { id: created.id, org: created.org, key: created.key, expires_at: created.expires_at, scope: created.scope },
    [
      `created ${created.scope} API key ${created.id} for ${created.org}${created.expires_at ? ` (expires ${created.expires_at})` : ''}`,
      `key: ${created.key}`,
      'store it now: it cannot be shown again',
    ].join('\n'),
  );
}

/** `key list`: an organization's keys, ids and status, never the keys. */
export async function runKeyList(options: OutputOptions & { org: string }): Promise<void> {
  const keys = await withStore((store) => listApiKeys(store, options.org));
  const lines = keys.map(
    (k) => `${k.id}  ${k.status.padEnd(7)}  ${k.scope.padEnd(8)}  created ${k.created_at}${k.expires_at ? `  expires ${k.expires_at}` : ''}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`,
  );
  print(options, keys, lines.length > 0 ? lines.join('\n') : `no keys for ${options.org}`);
}

/** `key revoke`: revokes a key by its id. */
export async function runKeyRevoke(id: string, options: OutputOptions): Promise<void> {
  refuseSecret(id);
  const revoked = await withStore((store) => revokeApiKey(store, id));
  print(options, revoked, `revoked ${revoked.id} of ${revoked.org} at ${revoked.revoked_at}`);
}

function parseScope(raw: string): KeyScope {
  if (!isKeyScope(raw)) throw new UsageError(`--scope must be one of ${KEY_SCOPES.join(', ')}, got '${raw}'`);
  return raw;
}

function parseExpiry(raw: string): string {
  const parsed = parseTimestamp(raw, 'from');
  if (!parsed.ok) throw new UsageError(`--expires ${parsed.reason}, got '${raw}'`);
  return formatMicros(parsed.micros);
}

/**
 * `key revoke` takes the key id. Given the key itself (secret included),
 * say so without ever printing it: error output ends up in logs and CI
 * transcripts.
 */
function refuseSecret(argument: string): void {
  const id = keyIdOf(argument);
  if (id === undefined && !argument.toLowerCase().startsWith('lak_')) return;
  const hint = id === undefined ? 'key ids look like key_ and 16 hex digits; `key list --org ORG` shows them' : `this key's id is ${id}`;
  throw new UsageError(
    `that argument is an API key's secret, not its id: pass the key id instead (${hint}). The secret was not printed; it may be in your shell history, so revoke the key and rotate it`,
  );
}
