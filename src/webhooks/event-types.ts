/**
 * Every event type the service emits (SPEC §3c): the object types the
 * triggers of migration 017 track (events_track), each with `.created` and
 * `.updated`, and `loan.repaid` (a loan's own status event); ledger entries
 * are never edited, so they have only `.created`. A test holds this list to
 * the triggers installed in the schema.
 */
export const EVENT_TYPES = [
  'credit_limit.created',
  'credit_limit.updated',
  'entity.created',
  'entity.updated',
  'ledger_entry.created',
  'loan.created',
  'loan.updated',
  'loan.repaid',
  'payment_method.created',
  'payment_method.updated',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** `credit_limit.*`, …: a prefix taking every type of one object. */
export const EVENT_TYPE_PREFIXES: readonly string[] = [...new Set(EVENT_TYPES.map((type) => `${type.split('.')[0]}.*`))];

/** `*`: every type, including those added later. */
export const EVERY_EVENT = '*';

/** Whether `pattern` is an entry an endpoint's enabled_events may hold: a type, a `prefix.*` of a known object, or `*`. */
export function isEventPattern(pattern: string): boolean {
  return pattern === EVERY_EVENT || (EVENT_TYPES as readonly string[]).includes(pattern) || EVENT_TYPE_PREFIXES.includes(pattern);
}

/** Every type, every prefix and `*` once each: a longer enabled_events can only repeat itself. */
export const MAX_ENABLED_EVENTS = EVENT_TYPES.length + EVENT_TYPE_PREFIXES.length + 1;
