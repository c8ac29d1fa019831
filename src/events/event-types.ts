import type { ResourceDefinition } from '../listing/resource-definition.js';
import { creditLimits } from '../resources/credit-limits.js';
import { entities } from '../resources/entities.js';
import { ledgerEntries } from '../resources/ledger-entries.js';
import { loans } from '../resources/loans.js';
import { paymentMethods } from '../resources/payment-methods.js';
import { EVENT_TYPES as EVERY_EVENT_TYPE } from '../webhooks/event-types.js';

/**
 * The records events are about, by the object type of their events (the
 * prefix of `credit_limit.updated`), as migration 017's events_track names
 * them: an event's data.object is rendered by this definition.
 */
export const EVENT_OBJECTS: Readonly<Record<string, ResourceDefinition>> = {
  payment_method: paymentMethods,
  entity: entities,
  credit_limit: creditLimits,
  loan: loans,
  ledger_entry: ledgerEntries,
};

/** The object type of an event type: `credit_limit.updated` → `credit_limit`. */
export function objectTypeOf(eventType: string): string {
  return eventType.slice(0, eventType.indexOf('.'));
}

/** The types of each object's events (SPEC §3c, the one list in webhooks/event-types.ts): loan.repaid replaces loan.updated for the repayment that makes a loan repaid. */
export const EVENT_TYPES_BY_OBJECT: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  Object.keys(EVENT_OBJECTS).map((object) => [object, EVERY_EVENT_TYPE.filter((type) => objectTypeOf(type) === object)]),
);

/** Every event type, grouped by object in EVENT_OBJECTS' order. */
export const EVENT_TYPES: readonly string[] = Object.values(EVENT_TYPES_BY_OBJECT).flat();

/**
 * The event types a pattern names: a type, `object.*` (every type of one
 * object) or `*`; undefined for anything else, as events_type_matches reads
 * an endpoint's enabled_events.
 */
export function eventTypesMatching(pattern: string): readonly string[] | undefined {
  if (pattern === '*') return EVENT_TYPES;
  if (pattern.endsWith('.*')) return EVENT_TYPES_BY_OBJECT[pattern.slice(0, -2)];
  return EVENT_TYPES.includes(pattern) ? [pattern] : undefined;
}

/** Whether `resources` serves every record an event can be about: the events log is served beside them. */
export function servesEvents(resources: readonly ResourceDefinition[]): boolean {
  return Object.values(EVENT_OBJECTS).every((resource) => resources.includes(resource));
}
