import { randomUUID } from 'node:crypto';
import { ApiError } from '../domain/errors.js';
import type { Queryable, Store, Transaction, TransactionOptions } from '../store/store.js';
import { emptyHours, HEALTH_COLUMN, type EndpointHealth } from './endpoint-health.js';
import { earlierSecretsAfterRotation, type SealedEndpointSecrets } from './endpoint-secrets.js';
import type { SecretBox } from './secret-box.js';
import { newSigningSecret } from './signature.js';

/** SPEC §3c: an organization holds at most this many endpoints. */
export const MAX_ENDPOINTS_PER_ORGANIZATION = 16;

/** An endpoint's description, in characters (the column's CHECK). */
export const MAX_DESCRIPTION_LENGTH = 500;

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_HOURS = 24;

/** An endpoint as the API renders it: never a secret (the create and rotate answers add `secret` themselves). */
export interface WebhookEndpoint {
  readonly id: string;
  readonly object: 'webhook_endpoint';
  readonly url: string;
  readonly description: string | null;
  readonly enabled_events: string[];
  readonly disabled: boolean;
  readonly disabled_reason: 'failing' | 'requested' | null;
  readonly created_at: string;
  readonly updated_at: string;
  /** How its deliveries are going (src/webhooks/endpoint-health.ts). */
  readonly health: EndpointHealth;
}

/** The health of an endpoint nothing was delivered to yet. */
const NEW_ENDPOINT_HEALTH: Omit<EndpointHealth, 'hourly_24h'> = { pending: 0, last_attempt_at: null, last_success_at: null, failing_since: null, succeeded_24h: 0, failed_24h: 0 };

export interface EndpointInput {
  readonly url: string;
  readonly enabledEvents: readonly string[];
  readonly description: string | null;
}

/** An update: each member absent leaves the field as it is; `description: null` clears it. */
export interface EndpointChanges {
  readonly url?: string;
  readonly enabledEvents?: readonly string[];
  readonly description?: string | null;
  readonly disabled?: boolean;
}

const TIMESTAMP = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * The public columns of `w`, named as the API names them (no secret among
 * them). A write renders them outside its statement (`WITH w AS (… RETURNING
 * w.*) SELECT …`): on Citus the RETURNING of a write to a sharded table may
 * hold no function but an immutable one.
 */
const RENDERED = `w.uid AS id, 'webhook_endpoint' AS object, w.url, w.description, w.enabled_events, w.disabled, w.disabled_reason,
  to_char(w.created_at AT TIME ZONE 'UTC', ${TIMESTAMP}) AS created_at,
  to_char(w.updated_at AT TIME ZONE 'UTC', ${TIMESTAMP}) AS updated_at`;

/** An endpoint as a read renders it, health included: $1 the organization, `w` the endpoint's row. */
const RENDERED_WITH_HEALTH = `${RENDERED}, ${HEALTH_COLUMN}`;

/** The endpoint `uid` of the organization, health included ($1 org, $2 uid). */
const SELECT_ENDPOINT = `SELECT ${RENDERED_WITH_HEALTH} FROM webhook_endpoints w WHERE w.org_id = $1 AND w.uid = $2`;

/**
 * Locks the organization's event stream (migration 017: the row each publication of its events locks
 * first). Endpoint changes take it too, so a publication fans its events out either before a change or
 * after it, never across it: a deleted or disabled endpoint gets no delivery its cancellation missed, and
 * two creations count the endpoints one after the other (the cap holds under concurrency). A resend
 * or a replay takes it so that two of them never both find an event not yet waiting and queue it twice.
 */
export async function lockEventStream(tx: Transaction, orgId: string): Promise<void> {
  await tx.query(
    `INSERT INTO event_streams AS s (org_id, published_through) VALUES ($1, '-infinity')
     ON CONFLICT (org_id) DO UPDATE SET published_through = s.published_through`,
    [orgId],
  );
}

/** A new endpoint and its signing secret, shown this once and stored sealed under `box`. */
export async function createEndpoint(
  store: Store,
  orgId: string,
  input: EndpointInput,
  box: SecretBox,
  options?: TransactionOptions,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const secret = newSigningSecret();
  const sealed = box.seal(secret);
  const endpoint = await store.transaction(async (tx) => {
    await lockEventStream(tx, orgId);
    const [held] = await tx.query<{ count: number }>('SELECT count(*)::int AS count FROM webhook_endpoints WHERE org_id = $1', [orgId]);
    if ((held?.count ?? 0) >= MAX_ENDPOINTS_PER_ORGANIZATION) {
      throw new ApiError(
        'webhook_endpoint_limit',
        `your organization already has ${MAX_ENDPOINTS_PER_ORGANIZATION} webhook endpoints, the most it may hold; delete one (or widen an existing one's enabled_events) first`,
        { extensions: { limit: MAX_ENDPOINTS_PER_ORGANIZATION } },
      );
    }
    const [row] = await tx.query<Omit<WebhookEndpoint, 'health'>>(
      `WITH w AS (
         INSERT INTO webhook_endpoints (org_id, uid, url, description, enabled_events, secret_ciphertext, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5::text[], $6, now(), now())
         RETURNING *
       )
       SELECT ${RENDERED} FROM w`,
      [orgId, `we_${randomUUID().replaceAll('-', '')}`, input.url, input.description, [...input.enabledEvents], sealed],
    );
    if (!row) throw new Error('INSERT … RETURNING returned no row');
    return { ...row, health: { ...NEW_ENDPOINT_HEALTH, hourly_24h: emptyHours() } };
  }, options);
  return { endpoint, secret };
}

export async function retrieveEndpoint(db: Queryable, orgId: string, uid: string): Promise<WebhookEndpoint | undefined> {
  const [row] = await db.query<WebhookEndpoint>(SELECT_ENDPOINT, [orgId, uid]);
  return row;
}

/**
 * One page of the organization's endpoints, oldest first (there are at most
 * 16), and how many there are; a page past the end has no items.
 */
export async function listEndpoints(db: Queryable, orgId: string, offset: number, limit: number): Promise<{ count: number; items: WebhookEndpoint[] }> {
  const [held] = await db.query<{ count: number }>('SELECT count(*)::int AS count FROM webhook_endpoints WHERE org_id = $1', [orgId]);
  const count = held?.count ?? 0;
  if (offset >= count) return { count, items: [] };
  const items = await db.query<WebhookEndpoint>(
    `SELECT ${RENDERED_WITH_HEALTH} FROM webhook_endpoints w WHERE w.org_id = $1 ORDER BY w.created_at, w.id LIMIT $2 OFFSET $3`,
    [orgId, limit, offset],
  );
  return { count, items };
}

/**
 * Applies `changes`. Disabling sets disabled_reason `requested` (an endpoint
 * already disabled keeps its reason); enabling a disabled one clears its
 * reason and failure clock. Pending deliveries the endpoint no longer takes
 * (it is disabled, or their type left enabled_events) are cancelled in the
 * same transaction. Undefined: no such endpoint in the organization.
 */
export async function updateEndpoint(
  store: Store,
  orgId: string,
  uid: string,
  changes: EndpointChanges,
  options?: TransactionOptions,
): Promise<WebhookEndpoint | undefined> {
  return store.transaction(async (tx) => {
    await lockEventStream(tx, orgId);
    const [row] = await tx.query<{ row_id: string }>(
      `WITH w AS (
       UPDATE webhook_endpoints w SET
         url = coalesce($3, w.url),
         enabled_events = coalesce($4::text[], w.enabled_events),
         description = CASE WHEN $5::boolean THEN $6 ELSE w.description END,
         disabled = coalesce($7::boolean, w.disabled),
         disabled_reason = CASE WHEN $7::boolean IS NULL THEN w.disabled_reason
                                WHEN $7::boolean THEN coalesce(w.disabled_reason, 'requested')
                                ELSE NULL END,
         failing_since = CASE WHEN $7::boolean = false AND w.disabled THEN NULL ELSE w.failing_since END,
         updated_at = now()
       WHERE w.org_id = $1 AND w.uid = $2
       RETURNING w.*
       )
       SELECT w.id::text AS row_id FROM w`,
      [
        orgId,
        uid,
        changes.url ?? null,
        changes.enabledEvents ? [...changes.enabledEvents] : null,
        changes.description !== undefined,
        changes.description ?? null,
        changes.disabled ?? null,
      ],
    );
    if (!row) return undefined;
    await tx.query(
      `UPDATE webhook_deliveries d SET state = 'cancelled', updated_at = now()
         FROM events e, webhook_endpoints w
        WHERE d.org_id = $1 AND d.endpoint_id = $2 AND d.state = 'pending'
          AND e.org_id = $1 AND e.id = d.event_id AND e.created_at = d.event_created_at
          AND w.org_id = $1 AND w.id = $2
          AND (w.disabled OR NOT events_type_matches(e.type, w.enabled_events))`,
      [orgId, row.row_id],
    );
    // Rendered after the cancellation: `health.pending` counts what is still waiting.
    return (await tx.query<WebhookEndpoint>(SELECT_ENDPOINT, [orgId, uid]))[0];
  }, options);
}

/** Deletes the endpoint, its health counts, and cancels its pending deliveries, in one transaction; false: no such endpoint. */
export async function deleteEndpoint(store: Store, orgId: string, uid: string, options?: TransactionOptions): Promise<boolean> {
  return store.transaction(async (tx) => {
    await lockEventStream(tx, orgId);
    const [result] = await tx.query<{ deleted: number }>(
      `WITH gone AS (
         DELETE FROM webhook_endpoints WHERE org_id = $1 AND uid = $2 RETURNING id
       ), cancelled AS (
         UPDATE webhook_deliveries SET state = 'cancelled', updated_at = now()
          WHERE org_id = $1 AND endpoint_id IN (SELECT id FROM gone) AND state = 'pending'
         RETURNING id
       ), forgotten AS (
         DELETE FROM webhook_endpoint_stats WHERE org_id = $1 AND endpoint_id IN (SELECT id FROM gone) RETURNING endpoint_id
       )
       SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM forgotten)::int AS forgotten, (SELECT count(*) FROM cancelled)::int AS cancelled`,
      [orgId, uid],
    );
    return (result?.deleted ?? 0) > 0;
  }, options);
}

/**
 * A new signing secret for the endpoint, shown this once; the one it replaces
 * keeps signing beside it for PREVIOUS_SECRET_HOURS, and so does each rotated
 * out before it, until its own hours end (at most MAX_EARLIER_SECRETS of
 * them): a client whose rotation got no answer rotates again, and its
 * receivers, still on the first secret, keep verifying. The row is locked
 * while the list is rebuilt. Undefined: no such endpoint.
 */
export async function rotateEndpointSecret(
  store: Store,
  orgId: string,
  uid: string,
  box: SecretBox,
  options?: TransactionOptions,
): Promise<{ endpoint: WebhookEndpoint; secret: string } | undefined> {
  const secret = newSigningSecret();
  const sealed = box.seal(secret);
  const [endpoint] = await store.transaction(async (tx) => {
    const [stored] = await tx.query<SealedEndpointSecrets & { now_ms: number | string }>(
      `SELECT secret_ciphertext, previous_secret_ciphertext, previous_secret_expires_at, earlier_secrets,
              (extract(epoch FROM now()) * 1000)::float8 AS now_ms
         FROM webhook_endpoints WHERE org_id = $1 AND uid = $2 FOR UPDATE`,
      [orgId, uid],
    );
    if (!stored) return [];
    await tx.query(
      `WITH w AS (
         UPDATE webhook_endpoints w SET
           earlier_secrets = $5,
           previous_secret_ciphertext = w.secret_ciphertext,
           previous_secret_expires_at = now() + make_interval(hours => $4),
           secret_ciphertext = $3,
           updated_at = now()
         WHERE w.org_id = $1 AND w.uid = $2
         RETURNING w.id
       )
       SELECT count(*) FROM w`,
      [orgId, uid, sealed, PREVIOUS_SECRET_HOURS, earlierSecretsAfterRotation(box, stored, Number(stored.now_ms))],
    );
    return tx.query<WebhookEndpoint>(SELECT_ENDPOINT, [orgId, uid]);
  }, options);
  return endpoint && { endpoint, secret };
}
