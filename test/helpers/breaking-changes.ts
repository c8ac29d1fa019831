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

/**
 * A security scheme added to `components`: api-smart-diff counts it as breaking, but a scheme only
 * defined changes nothing a client sends; requiring it where it was not would show as a change of an
 * operation's or the document's `security`, which stays classed as api-smart-diff says (an added
 * alternative, like the portal's bearer session beside basicAuth, is not breaking there).
 */
function isNewSecurityScheme(path: readonly (string | number)[], action: string): boolean {
  return action === 'add' && path.length === 3 && path[0] === 'components' && path[1] === 'securitySchemes';
}

/** The changes from `released` to `current` that api-smart-diff classes as breaking for a client. */
export function breakingChanges(released: JsonObject, current: JsonObject): BreakingChange[] {
  const { diffs } = apiCompare(released, current);
  return diffs
    .filter((diff) => diff.type === 'breaking' && !isNewErrorCode(diff.path, diff.action) && !isNewSecurityScheme(diff.path, diff.action))
    .map((diff) => ({ path: diff.path.join(' › '), description: diff.description ?? `${diff.action} ${JSON.stringify(diff.after ?? diff.before)}` }));
}
