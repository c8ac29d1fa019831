import type { FairShare } from '../store/fair-share.js';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { basicAuthHook, requireAuth } from '../auth/basic-auth-hook.js';
import { ApiError } from '../domain/errors.js';
import { entryOperation, LEDGER_KINDS, LedgerError, LedgerWriter, limitViewOf, newLedgerId, type LedgerKind } from '../ledger/index.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import type { NodeRole } from '../store/node-role.js';
import type { Queryable, Store } from '../store/store.js';
import { IDEMPOTENT_REPLAYED_HEADER, idempotencyKeyOf } from './idempotency-key-header.js';
import { PROBLEM_CONTENT_TYPE, problemDocument } from './problem.js';
import type { DatabaseOf } from './request-database.js';
import { authenticateWithLimits } from '../rate-limits/rate-limits.js';
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
  /** The store as a request sees it, within its database budget (DATABASE_REQUEST_BUDGET_MS). */
  databaseOf: DatabaseOf;
  /** Database time of a write's transaction, from its start (DATABASE_REQUEST_BUDGET_MS); 0: none. */
  transactionBudgetMs: number;
  /** The write queue's bounds (WRITE_QUEUE_WAIT_MS, WRITE_CONCURRENCY); the ledger's defaults when absent. */
  queue?: { maxWaitMs?: number; concurrency?: number } | undefined;
  /** The node's FairShare (the writer tells overload from an unreachable database by it). */
  share?: FairShare | undefined;
  /** Told of the writer, e.g. to export its queue's figures as metrics. */
  onWriter?: ((writer: LedgerWriter) => void) | undefined;
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
 * (422), the node's role (503); then the ledger's writer (LedgerWriter),
 * which queues, records and answers it. This file only turns its answer
 * (or refusal) into HTTP.
 */
export async function writeRoutes(app: FastifyInstance, options: WriteRoutesOptions): Promise<void> {
  const { store, role, limits, authCache, idempotencyTtlHours, databaseOf } = options;
  const writer = new LedgerWriter(store, {
    idempotencyTtlHours,
    problemBody: (error, requestId) => JSON.stringify(problemDocument(error, requestId)),
    transactionBudgetMs: options.transactionBudgetMs,
    queue: options.queue,
    share: options.share,
  });
  options.onWriter?.(writer);
  const limitView = limitViewOf(limits);

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
  // Callback style, as the app's own hooks: an async hook costs a promise and a microtask turn per write.
  app.addHook('onRequest', (request, _reply, done) => {
    if (requireAuth(request).scope !== 'write') {
      throw new ApiError('insufficient_scope', 'this API key is read-only; writes need a key created with `key create --scope write`');
    }
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('cache-control', 'no-store');
    // Refused before its body was read (401, 403, 429): do not wait for the rest of it.
    closeIfBodyPending(request, reply);
    done(null, payload);
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
      const operation = entryOperation(limitView, {
        orgId: auth.orgId,
        kind,
        id: newLedgerId(kind),
        limit: uid,
        amount: body.amount,
        at: body.at,
        keyId: auth.keyId,
        reference: body.reference,
      });
      try {
        const answer = await writer.write({ operation, idempotency: { key: idempotencyKey, keyId: auth.keyId }, requestId: request.id });
        return send(reply, answer.status, answer.body, answer.replayed);
      } catch (error) {
        throw error instanceof LedgerError ? ledgerApiError(error) : error;
      }
    });
  }

  loanWriteRoutes(app, {
    writer,
    views: { loans: options.loans, limits },
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

/** A write the ledger refused without an answer to store: what the client sent was wrong (or a 500). */
function ledgerApiError(error: LedgerError): ApiError {
  if (error.code === 'limit_not_found') return new ApiError('not_found', error.message, { cause: error });
  if (error.code === 'invalid_entry') return ApiError.invalidBody([{ param: 'at', detail: error.message }]);
  return new ApiError('internal_error', 'an unexpected error occurred; quote the request_id when reporting it', { cause: error });
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
