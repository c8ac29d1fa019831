import type { Statement, Store } from '../store/store.js';
import type { AttemptResult } from './attempt.js';
import type { ClaimedDelivery } from './delivery-claims.js';
import { COUNT_ATTEMPTS } from './endpoint-health.js';

/** What became of the delivery after an attempt was recorded. */
export type DeliveryState = 'pending' | 'delivered' | 'failed' | 'cancelled' | 'not_ours';

export interface RecordedAttempt {
  readonly state: DeliveryState;
  /** The endpoint was disabled by this attempt: every attempt had failed for `failingDisableMs`. */
  readonly endpointDisabled: boolean;
}

/*
 * PENDING_BY_KEY. A recording names its deliveries by both keys the
 * indexes offer (id; event id), and "still pending" is written
 * `state <> ALL ('{delivered,failed,cancelled}')` (the same, by the table's
 * CHECK), not `state = 'pending'`, which would let the planner read the
 * organization's pending deliveries through the partial indexes. With
 * statistics taken before a backlog built up (the moment deliveries fall
 * behind), it did, or read all of the organization's deliveries through
 * (org_id, event_id): every recording scanned the backlog (10 ms for 25
 * deliveries behind 20,000), so the further behind, the slower each
 * recording. Now every index it can use is a probe per delivery, unless the
 * statistics predate the organization's first deliveries altogether.
 */

/**
 * The delivery after its attempt: delivered on success (whoever holds the
 * claim: the receiver has it); otherwise, while this node's claim is still
 * its own, pending again at `$7` (null: given up, `failed`), or `cancelled`
 * when its endpoint was deleted or disabled meanwhile. The claim is
 * released (the delivery found by its keys, `state <> ALL (…)` meaning
 * pending: see PENDING_BY_KEY). Then the attempt row, kept while the
 * endpoint exists, with the next attempt's time. $1 org, $2 endpoint, $3 delivery, $4 node, $5 ok
 * (0/1), $6 event uid, $7 next attempt (timestamptz) or null, $8 attempt,
 * $9 status, $10 duration ms, $11 error, $12 response body, $13 event id,
 * $14 the event's created_at (the delivery's partition: migration 025). The next
 * attempt's time is the node's clock plus the delay: on Citus an UPDATE of a
 * sharded table may not compute it in a CASE.
 */
export const RECORD_ATTEMPT = `WITH endpoint AS (
    SELECT id, disabled FROM webhook_endpoints WHERE org_id = $1 AND id = $2
  ), delivery AS (
    UPDATE webhook_deliveries d
       SET state = CASE WHEN $5::int = 1 THEN 'delivered'
                        WHEN NOT EXISTS (SELECT 1 FROM endpoint WHERE NOT disabled) THEN 'cancelled'
                        WHEN $7::timestamptz IS NULL THEN 'failed' ELSE 'pending' END,
           attempts = d.attempts + 1,
           next_attempt_at = CASE WHEN $5::int = 0 AND $7::timestamptz IS NOT NULL AND EXISTS (SELECT 1 FROM endpoint WHERE NOT disabled)
                                  THEN $7::timestamptz ELSE d.next_attempt_at END,
           claimed_until = NULL, claimed_by = NULL, updated_at = now()
     WHERE d.org_id = $1 AND d.id = $3 AND d.event_id = $13 AND d.event_created_at = $14::timestamptz AND d.state <> ALL ('{delivered,failed,cancelled}'::text[]) AND ($5::int = 1 OR d.claimed_by = $4)
    RETURNING d.state, d.next_attempt_at
  ), attempt AS (
    INSERT INTO webhook_attempts (org_id, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, error, response_body, next_attempt_at, created_at)
    SELECT $1, $2, $3, $6, $8, $9, $10, $11, $12, (SELECT next_attempt_at FROM delivery WHERE state = 'pending'), now()
     WHERE EXISTS (SELECT 1 FROM endpoint)
    RETURNING id
  )
  SELECT coalesce((SELECT state FROM delivery), 'not_ours') AS state, (SELECT count(*) FROM attempt)::int AS recorded`;

/**
 * RECORD_ATTEMPT for successful attempts of one organization, one statement
 * for them all: PostgreSQL's work per statement is most of a recording's
 * cost, and at hundreds of deliveries a second nearly every attempt
 * succeeds. $1 org, then arrays in one order: $2 endpoints, $3 deliveries,
 * $4 event uids, $5 attempts, $6 statuses, $7 durations ms, $8 response
 * bodies, $9 event ids, $10 the events' created_at; $11 and $12 the least
 * and greatest of $10 (a range the planner prunes partitions by: an array it
 * does not). A row per attempt: its delivery, and whether this
 * recorded it (false: it was no longer pending; 'not_ours'). Joins, not correlated
 * subqueries: Citus plans none over a CTE. The deliveries by their keys
 * (PENDING_BY_KEY).
 */
export const RECORD_DELIVERED = `WITH attempted AS (
    SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::int[], $6::int[], $7::int[], $8::text[])
      AS a(endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, response_body)
  ), delivery AS (
    UPDATE webhook_deliveries d
       SET state = 'delivered', attempts = d.attempts + 1, claimed_until = NULL, claimed_by = NULL, updated_at = now()
     WHERE d.org_id = $1 AND d.id = ANY ($3::bigint[]) AND d.event_id = ANY ($9::bigint[])
       AND d.event_created_at = ANY ($10::timestamptz[]) AND d.event_created_at BETWEEN $11::timestamptz AND $12::timestamptz
       AND d.state <> ALL ('{delivered,failed,cancelled}'::text[])
    RETURNING d.id
  ), attempt AS (
    INSERT INTO webhook_attempts (org_id, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, error, response_body, next_attempt_at, created_at)
    SELECT $1, a.endpoint_id, a.delivery_id, a.event_uid, a.attempt, a.status_code, a.duration_ms, NULL, a.response_body, NULL, now()
      FROM attempted a JOIN webhook_endpoints w ON w.org_id = $1 AND w.id = a.endpoint_id
    RETURNING id
  )
  SELECT a.delivery_id::text AS delivery_id, d.id IS NOT NULL AS delivered, (SELECT count(*) FROM attempt)::int AS recorded
    FROM attempted a LEFT JOIN delivery d ON d.id = a.delivery_id`;

/** A success clears the endpoint's failing streak. $1 org, $2 endpoint. */
const ENDPOINT_SUCCEEDED = `UPDATE webhook_endpoints SET failing_since = NULL
  WHERE org_id = $1 AND id = $2 AND failing_since IS NOT NULL RETURNING false AS disabled_now`;

/** A failure starts the endpoint's failing streak if none runs. $1 org, $2 endpoint. */
const FAILING_STREAK = `UPDATE webhook_endpoints SET failing_since = now()
  WHERE org_id = $1 AND id = $2 AND failing_since IS NULL RETURNING false AS disabled_now`;

/**
 * When the streak is older than $3 ms (every attempt failed since), disables
 * the endpoint ('failing') and cancels its pending deliveries but this one
 * (RECORD_ATTEMPT, which follows, cancels that). $1 org, $2 endpoint, $3 ms,
 * $4 this delivery. (Two statements, not one with CASE: see RECORD_ATTEMPT.)
 */
const DISABLE_WHEN_OVERDUE = `WITH flagged AS (
    UPDATE webhook_endpoints SET disabled = true, disabled_reason = 'failing', updated_at = now()
     WHERE org_id = $1 AND id = $2 AND NOT disabled AND failing_since < now() - $3::bigint * interval '1 millisecond'
    RETURNING id
  ), cancelled AS (
    UPDATE webhook_deliveries d SET state = 'cancelled', claimed_until = NULL, claimed_by = NULL, updated_at = now()
     WHERE d.org_id = $1 AND d.endpoint_id = $2 AND d.state = 'pending' AND d.id <> $4 AND EXISTS (SELECT 1 FROM flagged)
    RETURNING d.id
  )
  SELECT EXISTS (SELECT 1 FROM flagged) AS disabled_now, (SELECT count(*) FROM cancelled)::int AS cancelled`;

export interface RecordOptions {
  readonly nodeId: string;
  /** The wait before the next attempt; null when this was the last. */
  readonly retryDelayMs: number | null;
  /** How long every attempt must have failed before the endpoint is disabled. */
  readonly failingDisableMs: number;
}

export interface AttemptToRecord {
  readonly claim: ClaimedDelivery;
  readonly result: AttemptResult;
  readonly options: RecordOptions;
}

/** Records an attempt and its consequences in one transaction (one round trip on PostgreSQL when prepared). */
export async function recordAttempt(store: Store, claim: ClaimedDelivery, result: AttemptResult, options: RecordOptions): Promise<RecordedAttempt> {
  const [recorded] = await recordAttempts(store, [{ claim, result, options }]);
  return recorded!;
}

/**
 * Records attempts in one transaction, in order, each as recordAttempt
 * would: one commit for many deliveries. If it fails, none is recorded.
 * Successive successes of an organization share one statement.
 */
export async function recordAttempts(store: Store, attempts: readonly AttemptToRecord[]): Promise<RecordedAttempt[]> {
  const steps = recordingSteps(attempts);
  const rows = await store.transaction((tx) => tx.commitWith(steps.flatMap((step) => step.statements)));
  const recorded: RecordedAttempt[] = [];
  let next = 0;
  for (const step of steps) {
    recorded.push(...step.read(rows.slice(next, (next += step.statements.length)) as Row[][]));
  }
  return recorded;
}

type Row = Record<string, unknown>;

/** Statements that record some of the attempts, in order, and how to read what they return. */
interface RecordingStep {
  readonly statements: readonly Statement[];
  read(rows: readonly Row[][]): RecordedAttempt[];
}

/**
 * The statements, in the attempts' order. The endpoint's health first: an
 * attempt that disables it records no next attempt. A success after one
 * that cleared the same endpoint's streak (no failure between) would clear
 * nothing: it is not sent again.
 */
function recordingSteps(attempts: readonly AttemptToRecord[]): RecordingStep[] {
  const steps: RecordingStep[] = [];
  const cleared = new Set<string>();
  let successes: AttemptToRecord[] = [];
  const endSuccesses = () => {
    const byOrganization = new Map<string, AttemptToRecord[]>();
    for (const attempt of successes) byOrganization.set(attempt.claim.orgId, [...(byOrganization.get(attempt.claim.orgId) ?? []), attempt]);
    for (const [orgId, delivered] of byOrganization) steps.push(successStep(orgId, delivered, cleared));
    successes = [];
  };
  for (const attempt of attempts) {
    if (attempt.result.ok) {
      successes.push(attempt);
      continue;
    }
    endSuccesses();
    cleared.delete(attempt.claim.endpointId);
    steps.push(failureStep(attempt));
  }
  endSuccesses();
  return [...steps, ...healthSteps(attempts)];
}

/** The endpoints' health counts (src/webhooks/endpoint-health.ts), last, organization by organization in id order. */
function healthSteps(attempts: readonly AttemptToRecord[]): RecordingStep[] {
  const byOrganization = new Map<string, AttemptToRecord[]>();
  for (const attempt of attempts) byOrganization.set(attempt.claim.orgId, [...(byOrganization.get(attempt.claim.orgId) ?? []), attempt]);
  const organizations = [...byOrganization.keys()].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
  return organizations.map((orgId) => {
    const counted = byOrganization.get(orgId)!;
    const params = [orgId, counted.map(({ claim }) => claim.endpointId), counted.map(({ result }) => (result.ok ? 1 : 0))];
    return { statements: [{ sql: COUNT_ATTEMPTS, params }], read: () => [] };
  });
}

function successStep(orgId: string, delivered: readonly AttemptToRecord[], cleared: Set<string>): RecordingStep {
  const endpoints = [...new Set(delivered.map(({ claim }) => claim.endpointId))].filter((endpointId) => !cleared.has(endpointId));
  for (const endpointId of endpoints) cleared.add(endpointId);
  const column = <T>(value: (attempt: AttemptToRecord) => T) => delivered.map(value);
  // RFC 3339 UTC with microseconds, all in one format: their order as text is their order in time.
  const eventTimes = column(({ claim }) => claim.event.created_at);
  const record: Statement = {
    sql: RECORD_DELIVERED,
    params: [
      orgId,
      column(({ claim }) => claim.endpointId),
      column(({ claim }) => claim.deliveryId),
      column(({ claim }) => claim.event.uid),
      column(({ claim }) => claim.attempt),
      column(({ result }) => result.status),
      column(({ result }) => result.durationMs),
      column(({ result }) => (result.responseBody === '' ? null : withoutNul(result.responseBody))),
      column(({ claim }) => claim.eventId),
      eventTimes,
      eventTimes.reduce((least, at) => (at < least ? at : least)),
      eventTimes.reduce((greatest, at) => (at > greatest ? at : greatest)),
    ],
  };
  return {
    statements: [...endpoints.map((endpointId) => ({ sql: ENDPOINT_SUCCEEDED, params: [orgId, endpointId] })), record],
    read: (rows) => {
      const recorded = new Map((rows[rows.length - 1] ?? []).map((row) => [String(row.delivery_id), row.delivered === true]));
      return delivered.map(({ claim }) => ({ state: recorded.get(claim.deliveryId) ? 'delivered' : 'not_ours', endpointDisabled: false }));
    },
  };
}

function failureStep({ claim, result, options }: AttemptToRecord): RecordingStep {
  const health: Statement[] = [
    { sql: FAILING_STREAK, params: [claim.orgId, claim.endpointId] },
    { sql: DISABLE_WHEN_OVERDUE, params: [claim.orgId, claim.endpointId, options.failingDisableMs, claim.deliveryId] },
  ];
  return {
    statements: [...health, recordStatement(claim, result, options)],
    read: (rows) => {
      const state = ((rows[rows.length - 1]?.[0] as { state?: DeliveryState } | undefined)?.state ?? 'not_ours') as DeliveryState;
      const endpointDisabled = rows.slice(0, -1).some((endpoint) => endpoint[0]?.disabled_now === true);
      return [{ state, endpointDisabled }];
    },
  };
}

function recordStatement(claim: ClaimedDelivery, result: AttemptResult, options: RecordOptions): Statement {
  const retryAt = result.ok || options.retryDelayMs === null ? null : new Date(Date.now() + options.retryDelayMs).toISOString();
  return {
    sql: RECORD_ATTEMPT,
    params: [
      claim.orgId,
      claim.endpointId,
      claim.deliveryId,
      options.nodeId,
      result.ok ? 1 : 0,
      claim.event.uid,
      retryAt,
      claim.attempt,
      result.status,
      result.durationMs,
      result.error === null ? null : withoutNul(result.error),
      result.responseBody === '' ? null : withoutNul(result.responseBody),
      claim.eventId,
      claim.event.created_at,
    ],
  };
}

/** PostgreSQL text holds no NUL character; a receiver may send one. */
function withoutNul(text: string): string {
  return text.replaceAll('\u0000', '');
}
