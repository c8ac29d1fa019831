import type { EventRow } from '../webhooks/delivery-claims.js';
import { renderEventRow } from './event-rendering.js';

/** The body a delivery POSTs: the event exactly as GET /api/events/{id}/ renders it. */
export function renderDeliveredEvent(event: EventRow): Record<string, unknown> {
  return renderEventRow({
    uid: event.uid,
    type: event.type,
    object_uid: event.object_uid,
    created_at: event.created_at,
    data_object: event.data_object,
    previous_attributes: event.previous_attributes,
    request_id: event.request_id,
    idempotency_key: event.idempotency_key,
    import_id: event.import_id,
  });
}
