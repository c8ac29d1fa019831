import { API_VERSION } from '../domain/api-version.js';
import type { EventRow } from './delivery-claims.js';
import type { SecretBox } from './secret-box.js';
import type { EndpointSecretsRow } from './delivery-claims.js';

/**
 * STAND-IN until src/events/event-rendering.ts (renderEvent) lands: the event
 * JSON with data.object as stored (column names, to_jsonb values), not yet
 * as GET renders the record. server.ts swaps in the real one.
 */
export function renderEventStandIn(event: EventRow): Record<string, unknown> {
  return {
    id: event.uid,
    object: 'event',
    type: event.type,
    created_at: event.created_at,
    api_version: API_VERSION,
    data: { object: event.data_object, ...(event.previous_attributes === null ? {} : { previous_attributes: event.previous_attributes }) },
    request_id: event.request_id,
    idempotency_key: event.idempotency_key,
    import_id: event.import_id,
  };
}

/**
 * STAND-IN until src/webhooks/endpoint-secrets.ts (signingSecretsOf) lands:
 * the current secret, and the previous one while it has not expired.
 */
export function signingSecretsStandIn(box: SecretBox, row: EndpointSecretsRow, now: Date): string[] {
  const secrets = [box.open(row.secret_ciphertext)];
  if (row.previous_secret_ciphertext !== null && row.previous_secret_expires_at !== null && Date.parse(row.previous_secret_expires_at) > now.getTime()) {
    secrets.push(box.open(row.previous_secret_ciphertext));
  }
  return secrets;
}
