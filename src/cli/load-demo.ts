import type { Queryable } from '../store/store.js';
import type { DemoLine } from './demo-data.js';

/** Writes the demo lines for an organization; idempotent, in one transaction. */
export async function loadDemoLines(db: Queryable, orgId: string, lines: readonly DemoLine[]): Promise<void> {
  for (const line of lines) {
    switch (line.object) {
      case 'payment_method':
        await db.query(
          `INSERT INTO payment_methods (org_id, uid, entity, type, currency, last_2, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, right($6, 2), $7::timestamptz, $8::timestamptz)
           ON CONFLICT (org_id, uid) DO NOTHING`,
          [orgId, line.uid, line.entity, line.type, line.currency, line.account_number, line.created_at, line.updated_at],
        );
        break;
      case 'credit_limit':
        await db.query(
          `INSERT INTO credit_limits (org_id, uid, entity, currency, capacity, rate, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5::numeric, $6::numeric, $7::timestamptz, $8::timestamptz)
           ON CONFLICT (org_id, uid) DO NOTHING`,
          [orgId, line.uid, line.entity, line.currency, line.capacity, line.rate, line.created_at, line.updated_at],
        );
        break;
      default: {
        const inserted = await db.query<{ limit_id: string }>(
          `INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at)
           SELECT $1, $2, l.id, $4, $5::numeric, $6::timestamptz FROM credit_limits l WHERE l.org_id = $1 AND l.uid = $3
           ON CONFLICT (org_id, id) DO NOTHING RETURNING limit_id::text`,
          [orgId, line.id, line.limit, line.object, line.amount, line.at],
        );
        if (inserted[0]) {
          await db.query(
            `UPDATE credit_limits SET outstanding = outstanding + CASE WHEN $2 = 'drawdown' THEN $3::numeric ELSE -$3::numeric END,
                    updated_at = $4::timestamptz WHERE id = $1`,
            [inserted[0].limit_id, line.object, line.amount, line.at],
          );
        }
      }
    }
  }
}
