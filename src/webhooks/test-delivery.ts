import { randomBytes } from 'node:crypto';
import { API_VERSION } from '../domain/api-version.js';
import { formatMicros, nowMicros } from '../domain/timestamp.js';
import type { Queryable } from '../store/store.js';
import { deliverOnce, DEFAULT_DEADLINE_MS } from './attempt.js';
import type { DestinationPolicy } from './destination.js';
import { signingSecretsOf, type SealedEndpointSecrets } from './endpoint-secrets.js';
import type { SecretBox } from './secret-box.js';
import { signPayload } from './signature.js';
import { retrieveEndpoint } from './webhook-endpoints.js';

/** The type of a test delivery: not an event type of the log, never listed or enabled. */
export const TEST_EVENT_TYPE = 'webhook_endpoint.test';

/** The outcome of a test delivery, as POST /api/webhook_endpoints/{id}/test/ answers it (docs/webhooks.md "Testing an endpoint"). */
export interface TestDelivery {
  readonly object: 'webhook_endpoint_test';
  readonly endpoint: string;
  /** The delivery's `webhook-id`: `evt_test_…`, in no log. */
  readonly event: string;
  /** A 2xx arrived within the deadline. */
  readonly ok: boolean;
  readonly status_code: number | null;
  readonly duration_ms: number;
  readonly error: string | null;
  /** The first 1 KiB of the receiver's answer; null when it sent none. */
  readonly response_body: string | null;
}

export interface TestDeliverySettings {
  readonly box: SecretBox;
  readonly policy: DestinationPolicy;
  readonly deadlineMs?: number;
  /** The request that asked for it: the body's `request_id`. */
  readonly requestId: string;
}

/**
 * Sends the endpoint a signed `webhook_endpoint.test` delivery now and
 * answers with its outcome; undefined when the organization has no such
 * endpoint. Signed (every secret still honoured), bounded by the deadline and
 * refused an address the policy forbids exactly as a delivery is (the same
 * signPayload and deliverOnce), but made from this request, on a connection
 * of its own, and recorded nowhere: no event in the log, no attempt in the
 * endpoint's list, no change to its health or failing streak. A disabled
 * endpoint is tested too: that is how one checks a receiver before enabling it again.
 */
export async function sendTestDelivery(db: Queryable, orgId: string, endpointUid: string, settings: TestDeliverySettings): Promise<TestDelivery | undefined> {
  const endpoint = await retrieveEndpoint(db, orgId, endpointUid);
  if (!endpoint) return undefined;
  const [sealed] = await db.query<SealedEndpointSecrets & { url: string }>(
    `SELECT url, secret_ciphertext, previous_secret_ciphertext, previous_secret_expires_at, earlier_secrets
       FROM webhook_endpoints WHERE org_id = $1 AND uid = $2`,
    [orgId, endpointUid],
  );
  if (!sealed) return undefined;
  const id = `evt_test_${randomBytes(16).toString('hex')}`;
  const body = JSON.stringify({
    id,
    object: 'event',
    type: TEST_EVENT_TYPE,
    created_at: formatMicros(nowMicros()),
    api_version: API_VERSION,
    data: { object: endpoint },
    request_id: settings.requestId,
    idempotency_key: null,
    import_id: null,
  });
  const answer = (result: Omit<TestDelivery, 'object' | 'endpoint' | 'event'>): TestDelivery => ({ object: 'webhook_endpoint_test', endpoint: endpointUid, event: id, ...result });
  let signature: string;
  const timestamp = Math.floor(Date.now() / 1000);
  try {
    signature = signPayload({ id, timestamp, body }, signingSecretsOf(settings.box, sealed, new Date()));
  } catch {
    // Never the message: it could quote what it failed to open.
    return answer({ ok: false, status_code: null, duration_ms: 0, error: 'the delivery could not be signed (is WEBHOOK_SECRET_KEY the one the secrets were sealed with?)', response_body: null });
  }
  const result = await deliverOnce({
    url: sealed.url,
    headers: { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature },
    body,
    policy: settings.policy,
    deadlineMs: settings.deadlineMs ?? DEFAULT_DEADLINE_MS,
  });
  return answer({
    ok: result.ok,
    status_code: result.status !== null && result.status >= 100 && result.status <= 599 ? result.status : null,
    duration_ms: result.durationMs,
    error: result.error,
    response_body: result.responseBody === '' ? null : result.responseBody,
  });
}
