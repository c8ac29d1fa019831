import { PGlite } from '@electric-sql/pglite';
import type { DirectoryLock } from './directory-lock.js';
import type { Queryable, Store } from './store.js';

export class PgliteStore implements Store {
  readonly kind = 'pglite' as const;
  readonly description: string;

  private constructor(
    private readonly db: PGlite,
    private readonly lock: DirectoryLock | undefined,
    dataDir: string | undefined,
  ) {
    this.description = dataDir ? `pglite://${dataDir}` : 'pglite://memory';
  }

  /** Opens PGlite in `dataDir` (which the caller has locked), or in memory. */
  static async open(dataDir: string | undefined, lock?: DirectoryLock): Promise<PgliteStore> {
    const db = dataDir ? new PGlite(dataDir) : new PGlite();
    await db.waitReady;
    return new PgliteStore(db, lock, dataDir);
  }

  async query<Row>(sql: string, params: readonly unknown[] = []): Promise<Row[]> {
    const result = await this.db.query<Row>(sql, params as unknown[]);
    return result.rows;
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.db.transaction(async (transaction) =>
      fn({
        query: async <Row>(sql: string, params: readonly unknown[] = []) =>
          (await transaction.query<Row>(sql, params as unknown[])).rows,
        exec: async (sql: string) => {
          await transaction.exec(sql);
        },
      }),
    );
  }

  async exec(sql: string): Promise<void> {
    await this.db.exec(sql);
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.db.close();
    await this.lock?.release();
  }
}
