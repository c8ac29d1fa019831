/**
 * What an API key may do. Every key lists and retrieves (`read`, the
 * default); `write` may also record ledger entries and loans; `webhooks` may
 * also manage the organization's webhook endpoints. No scope holds another's
 * powers but reading: a write key cannot manage endpoints, a webhooks key
 * cannot write.
 */
export const KEY_SCOPES = ['read', 'write', 'webhooks'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

export function isKeyScope(value: string): value is KeyScope {
  return (KEY_SCOPES as readonly string[]).includes(value);
}
