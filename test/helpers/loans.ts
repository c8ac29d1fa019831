import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

export interface PostLoanOptions {
  readonly authorization: string;
  /** Defaults to a fresh UUID. */
  readonly idempotencyKey?: string;
}

/** POSTs to `/api/loans/` (`loan` undefined) or `/api/loans/{uid}/repayments/` through `inject`. */
export function postLoanWrite(app: FastifyInstance, loan: string | undefined, body: unknown, options: PostLoanOptions): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: loan === undefined ? '/api/loans/' : `/api/loans/${encodeURIComponent(loan)}/repayments/`,
    headers: {
      authorization: options.authorization,
      'content-type': 'application/json',
      'idempotency-key': options.idempotencyKey ?? randomUUID(),
    },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}
