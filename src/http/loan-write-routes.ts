import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireAuth } from '../auth/basic-auth-hook.js';
import { ApiError } from '../domain/errors.js';
import type { LedgerOperation, LedgerWriter, WriteAnswer } from '../ledger/index.js';
import { loanCreation, loanRepayment, type LoanResult, type LoanViews } from '../ledger/loan-operations.js';
import { idempotencyKeyOf } from './idempotency-key-header.js';
import { parseLoanBody } from './loan-body.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import { parseWriteBody } from './write-body.js';
import { presentedCredentialOf } from './presented-credential.js';

export interface LoanWriteRoutesOptions {
  /** The process's ledger: loan writes share the drawdowns' queue, idempotency and answers. */
  readonly ledger: LedgerWriter;
  readonly views: LoanViews;
  /** What every write checks once its body is read (the node's role). */
  readonly beforeWrite: (request: FastifyRequest) => Promise<void>;
  readonly send: (reply: FastifyReply, answer: WriteAnswer) => FastifyReply;
}

/** `POST /api/loans/` and `POST /api/loans/{uid}/repayments/`. */
export function loanCreatePath(views: LoanViews): string {
  return `/api/${views.loans.path}/`;
}

export function loanRepaymentPath(views: LoanViews): string {
  return `/api/${views.loans.path}/:uid/repayments/`;
}

/**
 * The loan writes (SPEC §3b, docs/api.md "Loans"), registered inside the
 * write routes' plugin: the same credentials, scope, rate limit, media type
 * and body checks, in the same order, then the Idempotency-Key, the body's
 * members (422), the node's role (503), and the write itself
 * (src/ledger/loan-operations.ts) through the process's ledger, as drawdowns are.
 */
export function loanWriteRoutes(app: FastifyInstance, options: LoanWriteRoutesOptions): void {
  const { ledger, views, beforeWrite, send } = options;
  const route = { bodyLimit: MAX_WRITE_BODY_BYTES, config: { readsBody: true } };

  const run = async (request: FastifyRequest, reply: FastifyReply, idempotencyKey: string, operation: LedgerOperation<LoanResult>) => {
    await beforeWrite(request);
    const auth = requireAuth(request);
    const answer = await ledger.write({ operation, idempotency: { key: idempotencyKey, keyId: auth.keyId }, requestId: request.id });
    return send(reply, answer);
  };

  app.post(loanCreatePath(views), route, async (request, reply) => {
    const auth = requireAuth(request);
    const idempotencyKey = idempotencyKeyOf(request.headers);
    const body = parseLoanBody(typeof request.body === 'string' ? request.body : undefined, presentedCredentialOf(request.headers.authorization));
    const operation = loanCreation(views, {
      orgId: auth.orgId,
      keyId: auth.keyId,
      creditLimit: body.credit_limit,
      paymentMethod: body.payment_method,
      principal: body.principal,
      reference: body.reference,
    });
    return run(request, reply, idempotencyKey, operation);
  });

  app.post<{ Params: { uid: string } }>(loanRepaymentPath(views), route, async (request, reply) => {
    const auth = requireAuth(request);
    const idempotencyKey = idempotencyKeyOf(request.headers);
    const body = parseWriteBody(typeof request.body === 'string' ? request.body : undefined, presentedCredentialOf(request.headers.authorization));
    const uid = request.params.uid;
    if (uid.includes('\u0000')) throw new ApiError('not_found', `no ${views.loans.name} with uid '${uid.slice(0, 80)}'`);
    const operation = loanRepayment(views, { orgId: auth.orgId, keyId: auth.keyId, loan: uid, amount: body.amount, at: body.at, reference: body.reference });
    return run(request, reply, idempotencyKey, operation);
  });
}
