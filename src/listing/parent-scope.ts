import { ApiError } from '../domain/errors.js';
import type { Queryable } from '../store/store.js';
import type { ListQuery } from './query-parser.js';
import { rowIdOf, type FilterDefinition, type ResourceDefinition } from './resource-definition.js';
import { identifierValue } from './value-parsers.js';

/** The parent filter's name: no client parameter can have it (`@` is not in any filter's name). */
const PARENT_PARAM = '@parent';

const parentFilters = new WeakMap<ResourceDefinition, FilterDefinition>();

/**
 * A nested collection's list, scoped to one parent record: the parent is
 * looked up by uid in the caller's organization (none there, including
 * another organization's, is a 404 naming it), and its row id becomes the
 * first filter. Everything the engine derives from filters then carries it:
 * the count, the page, the statement shapes, and the cursors, which are
 * bound to their filters and so continue only this parent's list.
 */
export async function scopeToParent(db: Queryable, resource: ResourceDefinition, orgId: string, parentUid: string, query: ListQuery): Promise<ListQuery> {
  const parent = resource.parent;
  if (!parent) throw new Error(`resource ${resource.path} is not nested under another`);
  const notFound = () => new ApiError('not_found', `no ${parent.resource.name} with uid '${parentUid.slice(0, 80)}'`);
  // No stored uid contains NUL, and PostgreSQL would reject it as a parameter.
  if (parentUid.includes('\u0000')) throw notFound();
  const [row] = await db.query<{ row_id: string }>(
    `SELECT ${rowIdOf(parent.resource)}::text AS row_id FROM ${parent.resource.table} WHERE org_id = $1 AND uid = $2`,
    [orgId, parentUid],
    { prepare: true },
  );
  if (!row) throw notFound();
  return { ...query, parentUid, filters: [{ filter: parentFilterOf(resource), value: row.row_id }, ...query.filters] };
}

function parentFilterOf(resource: ResourceDefinition): FilterDefinition {
  let filter = parentFilters.get(resource);
  if (!filter && resource.parent) {
    const column = resource.parent.column;
    filter = { param: PARENT_PARAM, field: column, column, operator: '=', value: identifierValue, description: `The ${resource.parent.resource.name}.` };
    parentFilters.set(resource, filter);
  }
  if (!filter) throw new Error(`resource ${resource.path} is not nested under another`);
  return filter;
}
