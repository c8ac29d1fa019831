import { PostgresStore } from '../../src/store/postgres-store.js';

/** A real PostgreSQL store pointed at a port where nothing listens: every query fails as the database being down. */
export function unreachableStore(): PostgresStore {
  return new PostgresStore('postgres://postgres@127.0.0.1:9/unreachable', { poolSize: 1, connectionTimeoutMs: 500 });
}
