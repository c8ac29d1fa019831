import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { requireAuth } from '../auth/basic-auth-hook.js';
import { ApiError } from '../domain/errors.js';
import { entryOperation, LEDGER_KINDS, LedgerError, limitViewOf, newLedgerId, type LedgerKind, type LedgerWriter, type WriteAnswer } from '../ledger/index.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import { ledgerCollectionsOf } from '../resources/index.js';
import type { NodeRole } from '../store/node-role.js';
import type { Queryable } from '../store/store.js';
import { IDEMPOTENT_REPLAYED_HEADER, idempotencyKeyOf } from './idempotency-key-header.js';
import { PROBLEM_CONTENT_TYPE, problemDocument } from './problem.js';
import type { DatabaseOf } from './request-database.js';
import { scopedJsonRoutes } from './scoped-json-routes.js';
import { parseWriteBody } from './write-body.js';
import { presentedCredentialOf } from './presented-credential.js';
import { loanWriteRoutes } from './loan-write-routes.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route reads its request body: the app must not close the connection for a body still arriving. */
    readsBody?: boolean;
  }
}

export interface WriteRoutesOptions {
  /** The process's one ledger: every write these routes take goes through it. */
  ledger: LedgerWriter;
  role: NodeRole;
  /**
   * The collections served: the ledger's (ledgerCollectionsOf) get their writes — drawdowns and repayments
   * on a credit limit, whose 201 shows the limit as GET would; loans and their repayments (loan-write-routes.ts).
   */
  resources: readonly ResourceDefinition[];
  authCache?: AuthCache | undefined;
  /** The store as a request sees it, within its database budget (DATABASE_REQUEST_BUDGET_MS). */
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
 * (422), the node's role (503); then the process's ledger (LedgerWriter),
 * which queues, records and answers it. This file only turns its answer
 * (or refusal) into HTTP.
 */
export async function writeRoutes(app: FastifyInstance, options: WriteRoutesOptions): Promise<void> {
  const written = ledgerCollectionsOf(options.resources);
  if (!written) return;
  const { limits, loans } = written;
  const { ledger, role, authCache, databaseOf } = options;
  const limitView = limitViewOf(limits);

  scopedJsonRoutes(app, {
    databaseOf,
    authCache,
    scope: 'write',
    refusal: 'this API key is read-only; writes need a key created with `key create --scope write`',
    budget: 'writes',
  });

  for (const kind of LEDGER_KINDS) {
    app.post<{ Params: { uid: string } }>(writePathOf(limits, kind), { bodyLimit: MAX_WRITE_BODY_BYTES, config: { readsBody: true } }, async (request, reply) => {
      const auth = requireAuth(request);
      const idempotencyKey = idempotencyKeyOf(request.headers);
      const body = parseWriteBody(typeof request.body === 'string' ? request.body : undefined, presentedCredentialOf(request.headers.authorization));
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
        const answer = await ledger.write({ operation, idempotency: { key: idempotencyKey, keyId: auth.keyId }, requestId: request.id });
        return send(reply, answer);
      } catch (error) {
        throw error instanceof LedgerError ? ledgerApiError(error) : error;
      }
    });
  }

  if (loans) {
    loanWriteRoutes(app, {
      ledger,
      views: { loans, limits },
      beforeWrite: (request) => refuseOnStandby(role, databaseOf(request)),
      send,
    });
  }
}

/**
 * The ledger's answer as HTTP. A refusal comes as its code and values (as
 * stored under its key): its problem document is rendered here, from them
 * alone, so a replay sends the first answer's bytes (its request_id the
 * first request's).
 */
function send(reply: FastifyReply, answer: WriteAnswer): FastifyReply {
  if (answer.replayed) reply.header(IDEMPOTENT_REPLAYED_HEADER, 'true');
  const body = answer.refusal ? JSON.stringify(problemDocument(new ApiError(answer.refusal.code, answer.refusal.detail), answer.refusal.request_id)) : answer.body;
  return reply
    .code(answer.status)
    .type(answer.status >= 400 ? PROBLEM_CONTENT_TYPE : 'application/json; charset=utf-8')
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
