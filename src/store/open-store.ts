import path from 'node:path';
import { acquireDirectoryLock } from './directory-lock.js';
import type { PostgresStoreOptions } from './postgres-store.js';
import type { Store } from './store.js';

export const DEFAULT_DATABASE_URL = 'pglite://./data';

export type StoreLocation =
  | { kind: 'postgres'; url: string }
  | { kind: 'pglite'; dataDir: string | undefined };

/**
 * Reads a `DATABASE_URL`: `postgres://…`/`postgresql://…`, `pglite://<dir>`
 * (relative to the working directory), or `pglite://memory`.
 * Returns an error message naming what is wrong instead of throwing.
 */
export function parseDatabaseUrl(url: string): StoreLocation | { error: string } {
  if (/^postgres(ql)?:\/\//i.test(url)) {
    try {
      new URL(url);
    } catch {
      return { error: 'is not a valid postgres:// URL' };
    }
    return { kind: 'postgres', url };
  }
  const pglite = /^pglite:\/\/(.+)$/i.exec(url);
  if (pglite?.[1]) {
    const target = pglite[1];
    return { kind: 'pglite', dataDir: target === 'memory' ? undefined : path.resolve(target) };
  }
  return { error: 'must start with postgres://, postgresql:// or pglite:// (e.g. pglite://./data or pglite://memory)' };
}

/**
 * Where a PostgreSQL URL points, for a message: `host:port/database as user`,
 * never the password. pg's defaults fill what the URL leaves out.
 */
export function describePostgresTarget(url: string): string {
  const parsed = new URL(url);
  const host = decodeURIComponent(parsed.hostname) || parsed.searchParams.get('host') || 'localhost';
  const port = parsed.port || parsed.searchParams.get('port') || '5432';
  const user = decodeURIComponent(parsed.username);
  const database = decodeURIComponent(parsed.pathname.slice(1)) || user;
  return `${host.includes(':') ? `[${host}]` : host}:${port}${database ? `/${database}` : ''}${user ? ` as ${user}` : ''}`;
}

export interface OpenStoreOptions extends PostgresStoreOptions {
  /** How long to wait for another process to release an embedded store. */
  lockWaitMs?: number;
  /** Embedded store's shared_buffers (`PGLITE_SHARED_BUFFERS`); PGlite's default (128MB) when absent. */
  pgliteSharedBuffers?: string | undefined;
}

// The drivers load only when a store is opened, so the CLI's help and
// argument errors answer without loading PGlite or pg (~200 ms).
export async function openStore(location: StoreLocation, options: OpenStoreOptions = {}): Promise<Store> {
  if (location.kind === 'postgres') {
    const { PostgresStore } = await import('./postgres-store.js');
    return new PostgresStore(location.url, options);
  }
  const { PgliteStore } = await import('./pglite-store.js');
  const settings: Record<string, string> = options.pgliteSharedBuffers === undefined ? {} : { shared_buffers: options.pgliteSharedBuffers };
  if (location.dataDir === undefined) return PgliteStore.open(undefined, undefined, undefined, settings);
  const lock = await acquireDirectoryLock(location.dataDir, { waitMs: options.lockWaitMs ?? 5000 });
  try {
    return await PgliteStore.open(location.dataDir, lock, undefined, settings);
  } catch (error) {
    await lock.release();
    throw error;
  }
}
