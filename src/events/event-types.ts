import { eventTypesOf, type ResourceDefinition } from '../listing/resource-definition.js';
import { RESOURCES } from '../resources/index.js';

/**
 * The records events are about, by the object type of their events (the
 * prefix of `credit_limit.updated`), from the definitions that declare
 * `events` (as their migrations' events_track names them): an event's
 * data.object is rendered by this definition.
 */
export const EVENT_OBJECTS: Readonly<Record<string, ResourceDefinition>> = Object.fromEntries(
  RESOURCES.flatMap((resource) => (resource.events ? [[resource.events.object, resource] as const] : [])),
);

/** The object type of an event type: `credit_limit.updated` → `credit_limit`. */
export function objectTypeOf(eventType: string): string {
  return eventType.slice(0, eventType.indexOf('.'));
}

/** The types of each object's events (SPEC §3c): `.created` and `.updated` unless the definition says otherwise. */
export const EVENT_TYPES_BY_OBJECT: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  Object.entries(EVENT_OBJECTS).map(([object, resource]) => [object, eventTypesOf(resource)]),
);

const OBJECTS_BY_NAME = Object.keys(EVENT_TYPES_BY_OBJECT).sort();

/** Every event type the service emits, by object name, each object's in its definition's order. */
export const EVENT_TYPES: readonly string[] = OBJECTS_BY_NAME.flatMap((object) => EVENT_TYPES_BY_OBJECT[object]!);

/** `credit_limit.*`, …: a prefix taking every type of one object. */
export const EVENT_TYPE_PREFIXES: readonly string[] = OBJECTS_BY_NAME.map((object) => `${object}.*`);

/** `*`: every type, including those added later. */
export const EVERY_EVENT = '*';

/** Whether `pattern` is an entry an endpoint's enabled_events may hold: a type, a `prefix.*` of a known object, or `*`. */
export function isEventPattern(pattern: string): boolean {
  return pattern === EVERY_EVENT || EVENT_TYPES.includes(pattern) || EVENT_TYPE_PREFIXES.includes(pattern);
}

/** Every type, every prefix and `*` once each: a longer enabled_events can only repeat itself. */
export const MAX_ENABLED_EVENTS = EVENT_TYPES.length + EVENT_TYPE_PREFIXES.length + 1;

/**
 * The event types a pattern names: a type, `object.*` (every type of one
 * object) or `*`; undefined for anything else, as events_type_matches reads
 * an endpoint's enabled_events.
 */
export function eventTypesMatching(pattern: string): readonly string[] | undefined {
  if (pattern === EVERY_EVENT) return EVENT_TYPES;
  if (pattern.endsWith('.*')) return EVENT_TYPES_BY_OBJECT[pattern.slice(0, -2)];
  return EVENT_TYPES.includes(pattern) ? [pattern] : undefined;
}

/** Whether `resources` serves every record an event can be about: the events log is served beside them. */
export function servesEvents(resources: readonly ResourceDefinition[]): boolean {
  return Object.values(EVENT_OBJECTS).every((resource) => resources.includes(resource));
}
