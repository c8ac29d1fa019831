import { createOrganization } from '../../organizations/organizations.js';
import type { Queryable } from '../../store/store.js';
import { print, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

/** `org create`: creates an organization. */
export async function runOrgCreate(options: OutputOptions & { name: string; uid?: string }): Promise<void> {
  const created = await withStore((store) => createOrganization(store, options.name, options.uid));
  print(
    options,
    { uid: created.uid, name: created.name },
    `created organization ${created.uid} (${created.name})\nnext: lending-api key create --org ${created.uid}`,
  );
}

/** `org list`: every organization with its number of active keys. */
export async function runOrgList(options: OutputOptions): Promise<void> {
  const organizations = await withStore((store) => listOrganizations(store));
  const width = Math.max(0, ...organizations.map((o) => o.uid.length));
  const lines = organizations.map(
    (o) => `${o.uid.padEnd(width)}  ${o.name}  (created ${o.created_at}; ${o.active_keys} active ${o.active_keys === 1 ? 'key' : 'keys'})`,
  );
  print(options, organizations, lines.length > 0 ? lines.join('\n') : 'no organizations yet: lending-api org create --name NAME');
}

export interface OrganizationSummary {
  uid: string;
  name: string;
  created_at: string;
  active_keys: number;
}

/** Every organization, oldest first, with how many of its keys work now (not revoked, not expired). */
async function listOrganizations(db: Queryable): Promise<OrganizationSummary[]> {
  const rows = await db.query<{ uid: string; name: string; created_at: string; active_keys: string }>(
    `SELECT o.uid, o.name, to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at,
            (SELECT count(*) FROM api_keys k WHERE k.org_id = o.id AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()))::text AS active_keys
       FROM organizations o ORDER BY o.created_at, o.id`,
  );
  return rows.map((row) => ({ ...row, active_keys: Number(row.active_keys) }));
}
