/**
 * What an API key may do: `read` (the default) lists and retrieves; `write` may also record ledger entries;
 * `webhooks` may also manage webhook endpoints and resend events.
 */
export const KEY_SCOPES = ['read', 'write', 'webhooks'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

export function isKeyScope(value: string): value is KeyScope {
  return (KEY_SCOPES as readonly string[]).includes(value);
}
