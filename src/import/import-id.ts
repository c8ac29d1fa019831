import { randomBytes } from 'node:crypto';

/**
 * An import run's id (`imp_…`): the events of the records it creates or
 * changes carry it as their `import_id` (SPEC §3c), and `lending-api import`
 * prints it, so a consumer of those events can tell which run made them.
 */
export function newImportId(): string {
  return `imp_${randomBytes(12).toString('hex')}`;
}
