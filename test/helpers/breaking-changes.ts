import { apiCompare } from 'api-smart-diff';
import type { JsonObject } from '../../src/openapi/json-schema.js';

export interface BreakingChange {
  readonly path: string;
  readonly description: string;
}

/**
 * A new value of a problem's `code`: additive by the policy (docs/api.md
 * "Versioning": a client handles an unknown code by its HTTP status), though
 * api-smart-diff counts a value added to a response enum inside `oneOf`/`allOf`
 * as breaking.
 */
function isNewErrorCode(path: readonly (string | number)[], action: string): boolean {
  const tail = path.slice(-4).map(String);
  return action === 'add' && path.includes('responses') && tail[0] === 'properties' && tail[1] === 'code' && tail[2] === 'enum';
}

/** The changes from `released` to `current` that api-smart-diff classes as breaking for a client. */
export function breakingChanges(released: JsonObject, current: JsonObject): BreakingChange[] {
  const { diffs } = apiCompare(released, current);
  return diffs
    .filter((diff) => diff.type === 'breaking' && !isNewErrorCode(diff.path, diff.action))
    .map((diff) => ({ path: diff.path.join(' › '), description: diff.description ?? `${diff.action} ${JSON.stringify(diff.after ?? diff.before)}` }));
}
