import { eventTypesOf, type ResourceDefinition } from './resource-definition.js';
import type { Queryable } from '../store/store.js';

/** The trigger functions of migration 017 that record a table's events. */
const EVENT_TRIGGER_FUNCTIONS = ['events_record_inserted', 'events_record_updated'] as const;

/**
 * A collection whose table records events (events_track in its migration)
 * must record exactly the columns its definition renders: an event's
 * data.object is rendered from them (src/events/event-rendering.ts), so a
 * column left out would be missing from every event, and one more would
 * make events of changes no client can see. Empty when the table records no
 * events or records them as declared.
 */
export async function eventTriggerProblems(db: Queryable, resource: ResourceDefinition, tableOid: string, tableColumns: ReadonlySet<string>): Promise<string[]> {
  const triggers = await db.query<{ function: string; args: string }>(
    `SELECT p.proname AS function, encode(t.tgargs, 'escape') AS args
       FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
      WHERE t.tgrelid = $1::oid AND NOT t.tgisinternal AND t.tgenabled <> 'D' AND p.proname = ANY ($2::text[])`,
    [tableOid, [...EVENT_TRIGGER_FUNCTIONS]],
  );
  const declared = resource.events;
  if (triggers.length === 0) {
    return declared ? [`events: the definition declares ${declared.object} events but the table records none (SELECT events_track('${resource.table}', '${declared.object}', …) in its migration)`] : [];
  }
  if (!declared) return [`events: the table records events (events_track) but the definition declares no \`events\` (its object and types)`];
  const problems: string[] = [];
  // A column the table lacks is reported as missing already.
  const rendered = new Set(Object.values(resource.fields).map((field) => field.column).filter((column) => tableColumns.has(column)));
  for (const fn of EVENT_TRIGGER_FUNCTIONS) {
    const trigger = triggers.find((candidate) => candidate.function === fn);
    if (!trigger) {
      problems.push(`events: no trigger running ${fn}() (install both with SELECT events_track('${resource.table}', …))`);
      continue;
    }
    const [object = '', , columnsLiteral = '{}', ownStatus = ''] = trigger.args.split('\\000');
    if (object !== declared.object) problems.push(`events: ${fn}() records them as ${object} events, the definition declares ${declared.object}`);
    if (fn === 'events_record_updated' && ownStatus !== '' && !eventTypesOf(resource).includes(`${object}.${ownStatus}`)) {
      problems.push(`events: ${fn}() emits ${object}.${ownStatus}, which the definition's events.types does not list`);
    }
    const recorded = new Set(columnsLiteral.replace(/^\{|\}$/g, '').split(',').filter((column) => column !== ''));
    const missing = [...rendered].filter((column) => !recorded.has(column));
    const extra = [...recorded].filter((column) => !rendered.has(column));
    if (missing.length > 0) problems.push(`events: ${fn}() does not record column(s) ${missing.join(', ')} that the definition renders`);
    if (extra.length > 0) problems.push(`events: ${fn}() records column(s) ${extra.join(', ')} that the definition does not render`);
  }
  return problems;
}
