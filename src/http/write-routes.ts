import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { basicAuthHook, requireAuth } from '../auth/basic-auth-hook.js';
import { ApiError } from '../domain/errors.js';
import { LEDGER_KINDS, type LedgerKind } from '../ledger/ledger-entry.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import type { NodeRole } from '../store/node-role.js';
import type { Queryable, Store } from '../store/store.js';
import { IDEMPOTENT_REPLAYED_HEADER, idempotencyKeyOf } from './idempotency-key-header.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';
import type { DatabaseOf } from './request-database.js';
import { authenticateWithLimits } from './rate-limits.js';
import { coalescedWrites } from './record-write.js';
import { closeIfBodyPending } from './unread-body.js';
import { parseWriteBody } from './write-body.js';
import { decodeJsonBody } from './json-body-text.js';
import { loanWriteRoutes } from './loan-write-routes.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route reads its request body: the app must not close the connection for a body still arriving. */
    readsBody?: boolean;
  }
}

export interface WriteRoutesOptions {
  store: Store;
  role: NodeRole;
  /** The credit-limit resource: the 201 shows the limit after the entry as GET would. */
  limits: ResourceDefinition;
  /** The loan resource: POST /api/loans/ and its repayments (loan-write-routes.ts). */
  loans: ResourceDefinition;
  authCache?: AuthCache | undefined;
  /** How long a stored response is replayed for its Idempotency-Key. */
  idempotencyTtlHours: number;
  /** The store as a request sees it, within its database budget (DATABASE_REQUEST_BUDGET_MS): its transaction too. */
  databaseOf: DatabaseOf;
}

/** `drawdown` → `drawdowns`: the collection a kind of entry is posted to. */
export function writePathOf(limits: ResourceDefinition, kind: LedgerKind): string {
  return `/api/${limits.path}/:uid/${kind}s/`;
}

/**
 * `POST /api/limits/{uid}/drawdowns/` and `…/repayments/` (SPEC §3a,
 * docs/api.md "Writes"). Checked in this order: credentials (401), scope
 * (403), the key's write budget (429), then the body's size, media type and
 * syntax (413, 415, 400), the Idempotency-Key (400), the body's members
 * (422), the node's role (503); then recordWrite, through the
 * limit's queue while another write to it is in flight (coalescedWrites).
 */
export async function writeRoutes(app: FastifyInstance, options: WriteRoutesOptions): Promise<void> {
  const { store, role, limits, authCache, idempotencyTtlHours, databaseOf } = options;
  const writes = coalescedWrites(store, limits, idempotencyTtlHours);

  // Only JSON: without this Fastify would also accept text/plain. The text is parsed by parseWriteBody (exact decimals).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, decodeJsonBody(request.headers['content-type'], body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  authenticateWithLimits(app, basicAuthHook(databaseOf, authCache), 'writes');
  app.addHook('onRequest', async (request) => {
    if (requireAuth(request).scope !== 'write') {
      throw new ApiError('insufficient_scope', 'this API key is read-only; writes need a key created with `key create --scope write`');
    }
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    // Refused before its body was read (401, 403, 429): do not wait for the rest of it.
    closeIfBodyPending(request, reply);
  });

  for (const kind of LEDGER_KINDS) {
    app.post<{ Params: { uid: string } }>(writePathOf(limits, kind), { bodyLimit: MAX_WRITE_BODY_BYTES, config: { readsBody: true } }, async (request, reply) => {
      const auth = requireAuth(request);
      const idempotencyKey = idempotencyKeyOf(request.headers);
      const body = parseWriteBody(typeof request.body === 'string' ? request.body : undefined);
      const uid = request.params.uid;
      if (uid.includes('\u0000')) throw new ApiError('not_found', `no ${limits.name} with uid '${uid.slice(0, 80)}'`);
      // The request's view of the store, made here if the authentication had no query to run: with it, its budget.
      const db = databaseOf(request);
      await refuseOnStandby(role, db);
      const budget = request.databaseBudget;
      const answer = await writes.run({ orgId: auth.orgId, keyId: auth.keyId, kind, limitUid: uid, body, idempotencyKey, requestId: request.id, budget });
      return send(reply, answer.status, answer.body, answer.replayed);
    });
  }

  loanWriteRoutes(app, {
    store,
    views: { loans: options.loans, limits },
    idempotencyTtlHours,
    beforeWrite: (request) => refuseOnStandby(role, databaseOf(request)),
    send,
  });
}

function send(reply: FastifyReply, status: number, body: string, replayed: boolean): FastifyReply {
  if (replayed) reply.header(IDEMPOTENT_REPLAYED_HEADER, 'true');
  return reply
    .code(status)
    .type(status >= 400 ? PROBLEM_CONTENT_TYPE : 'application/json; charset=utf-8')
    .send(body);
}

/** A hot standby cannot record anything: say so (503, retry on the primary) rather than fail in the database. */
async function refuseOnStandby(role: NodeRole, db: Queryable): Promise<void> {
  const state = await role.current(db);
  if (state.role === 'primary') return;
  throw new ApiError(
    'service_unavailable',
    'this node reads a hot standby, which cannot record drawdowns or repayments; send writes to a node on the primary',
    { headers: { 'retry-after': '1' } },
  );
}
