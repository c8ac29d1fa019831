import { randomBytes } from 'node:crypto';
import type { Queryable } from '../store/store.js';

/**
 * The installation's cursor secret, kept in the database
 * (`installation_secrets`, migration 009) so that every process and node of
 * one installation encrypts and reads cursors with the same key (derived
 * from it, see cursor.ts), across restarts. Read once per process, on the first cursor request (not at
 * start-up, so an app whose database is briefly unreachable still starts);
 * a failed read is retried by the next request.
 */
export class CursorSecret {
  private loading: Promise<Buffer> | undefined;

  /** `db`: the asking request's view of the store (within its budget), used when the secret has to be read. */
  get(db: Queryable): Promise<Buffer> {
    this.loading ??= loadCursorSecret(db).catch((error: unknown) => {
      this.loading = undefined;
      throw error;
    });
    return this.loading;
  }
}

const SELECT_SECRET = `SELECT secret FROM installation_secrets WHERE name = 'cursor'`;

export async function loadCursorSecret(db: Queryable): Promise<Buffer> {
  const [existing] = await db.query<{ secret: string }>(SELECT_SECRET);
  if (existing) return Buffer.from(existing.secret, 'base64url');
  // Two processes racing here both insert-if-absent; the first to commit
  // wins and the other reads its secret back.
  await db.query(`INSERT INTO installation_secrets (name, secret) VALUES ('cursor', $1) ON CONFLICT (name) DO NOTHING`, [
    randomBytes(32).toString('base64url'),
  ]);
  const [stored] = await db.query<{ secret: string }>(SELECT_SECRET);
  if (!stored) throw new Error('the cursor secret could not be stored');
  return Buffer.from(stored.secret, 'base64url');
}
