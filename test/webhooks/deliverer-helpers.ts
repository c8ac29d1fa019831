import { randomBytes } from 'node:crypto';
import { createLogger } from '../../src/logger.js';
import type { Queryable, Store } from '../../src/store/store.js';
import { Deliverer, type DelivererOptions } from '../../src/webhooks/deliverer.js';
import { signingSecretsOf } from '../../src/webhooks/endpoint-secrets.js';
import { renderDeliveredEvent } from '../../src/events/event-body.js';
import { SecretBox } from '../../src/webhooks/secret-box.js';
import { newSigningSecret } from '../../src/webhooks/signature.js';

export const TEST_BOX = SecretBox.fromKey(randomBytes(32));

/** Receivers on 127.0.0.1: the WEBHOOK_ALLOW_PRIVATE=1 policy. */
export const LOCAL_POLICY = { allowPrivate: true, allowHosts: [] } as const;

export interface TestEndpoint {
  readonly id: string;
  readonly uid: string;
  readonly secret: string;
}

/** An endpoint row as the API would create it, its secret sealed with TEST_BOX. */
export async function insertEndpoint(
  db: Queryable,
  orgId: string,
  url: string,
  enabledEvents: readonly string[] = ['*'],
  box: SecretBox = TEST_BOX,
): Promise<TestEndpoint> {
  const secret = newSigningSecret();
  const uid = `we_${randomBytes(8).toString('hex')}`;
  const [row] = await db.query<{ id: string }>(
    `INSERT INTO webhook_endpoints (org_id, uid, url, enabled_events, secret_ciphertext, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, now(), now()) RETURNING id::text AS id`,
    [orgId, uid, url, enabledEvents, box.seal(secret)],
  );
  return { id: row!.id, uid, secret };
}

export function newDeliverer(store: Store, options: Partial<DelivererOptions> = {}): Deliverer {
  return new Deliverer(store, {
    nodeId: `test-${randomBytes(4).toString('hex')}`,
    policy: LOCAL_POLICY,
    secretsOf: (row) => signingSecretsOf(TEST_BOX, row, new Date()),
    renderEvent: renderDeliveredEvent,
    log: createLogger(process.env.TEST_DELIVERER_LOG ?? 'silent'),
    ...options,
  });
}

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  state: string;
  attempts: number;
  next_attempt_at: string;
  claimed_by: string | null;
}

export async function deliveriesOf(db: Queryable, orgId: string): Promise<DeliveryRow[]> {
  return db.query<DeliveryRow>(
    `SELECT id::text AS id, endpoint_id::text AS endpoint_id, state, attempts, next_attempt_at::text AS next_attempt_at, claimed_by
       FROM webhook_deliveries WHERE org_id = $1 ORDER BY id`,
    [orgId],
  );
}

export interface AttemptRow {
  endpoint_id: string;
  event_uid: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  response_body: string | null;
  /** Seconds from the attempt to the next one; null when none follows. */
  next_in_seconds: number | null;
}

export async function attemptsOf(db: Queryable, orgId: string): Promise<AttemptRow[]> {
  const rows = await db.query<AttemptRow>(
    `SELECT endpoint_id::text AS endpoint_id, event_uid, attempt, status_code, error, response_body,
            extract(epoch FROM next_attempt_at - created_at)::float8 AS next_in_seconds
       FROM webhook_attempts WHERE org_id = $1 ORDER BY id`,
    [orgId],
  );
  return rows.map((row) => ({ ...row, next_in_seconds: row.next_in_seconds === null ? null : Number(row.next_in_seconds) }));
}

/** Waits until `check` holds, polling; fails after `ms` (generous: the machine is busy). */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 30_000, what = 'the condition'): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
