import type { JsonObject } from './json-schema.js';

/**
 * What the reference page pre-fills in a write's Idempotency-Key field; its
 * request interceptor sends a fresh random UUID in its place, so every
 * Execute is a new write (type your own key to try a replay).
 */
export const GENERATED_IDEMPOTENCY_KEY = 'fresh-uuid-per-request';

/**
 * The document as /docs renders it: with no `servers`, so "Try it out"
 * calls the server that serves the page; and with the Idempotency-Key
 * parameter pre-filled with GENERATED_IDEMPOTENCY_KEY.
 */
export function referencePageDocument(document: JsonObject): JsonObject {
  const copy = structuredClone(document);
  delete copy.servers;
  const parameters = (copy.components as { parameters?: Record<string, JsonObject> }).parameters;
  const key = parameters?.['Idempotency-Key'];
  if (key) {
    key.example = GENERATED_IDEMPOTENCY_KEY;
    key.description = `${String(key.description)} On this page \`${GENERATED_IDEMPOTENCY_KEY}\` sends a fresh random UUID with each Execute.`;
  }
  return copy;
}
