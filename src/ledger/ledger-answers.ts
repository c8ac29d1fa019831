import type { LoneWriteEnd, StoredAnswer } from './idempotency-keys.js';
import type { LedgerOperation, StoredRefusal } from './ledger-operation.js';
import type { Settled } from './queued-work.js';
import { keyReused } from './write-answers.js';

/* What is asked of the ledger and what it answers, fresh or from what was stored under an Idempotency-Key. */

/** A write to record, as the HTTP route, the CLI or a test asks for it. */
export interface LedgerWriteRequest<T = unknown> {
  readonly operation: LedgerOperation<T>;
  /**
   * An HTTP write's Idempotency-Key and the API key that sent it: the first
   * answer is stored under it and replayed. Absent for a caller whose
   * operation is idempotent on its own (the CLI's entry id).
   */
  readonly idempotency?: { readonly key: string; readonly keyId: string } | undefined;
  /** Stored with a refusal (StoredRefusal.request_id): its replays name the first request. */
  readonly requestId?: string | undefined;
}

/**
 * The answer to a write: a success's JSON text, or a refusal's values that
 * the caller renders (the HTTP layer: a problem document). A keyed write's
 * answer is stored under its key and replayed as it was.
 */
export type WriteAnswer<T = unknown> = {
  readonly status: number;
  /** True when this is the stored answer to an earlier request with the same key. */
  readonly replayed: boolean;
} & (
  | {
      /** The JSON text to send (a success; or, replayed, any answer the previous release stored as text). */
      readonly body: string;
      readonly refusal?: undefined;
      /** The operation's own result; undefined on a replay. */
      readonly value: T | undefined;
    }
  | { readonly body?: undefined; readonly refusal: StoredRefusal; readonly value?: undefined }
);

type AnyRequest = LedgerWriteRequest<unknown>;

/** A write's answer from what the statement that ended it found; undefined: it did not write. */
export function settledOf(request: AnyRequest, status: number, end: LoneWriteEnd): Settled<WriteAnswer> | undefined {
  switch (end.kind) {
    case 'stored': {
      const rendered = (request.operation.renderStored as NonNullable<AnyRequest['operation']['renderStored']>)(end.row);
      // `value` read only by a caller that wants it (it may be computed on demand).
      return {
        ok: true,
        value: {
          status,
          body: rendered.body,
          replayed: false,
          get value() {
            return rendered.value;
          },
        },
      };
    }
    case 'replay':
      return { ok: true, value: replayOf(request, end.status, end.answer) };
    case 'reused':
      return { ok: false, error: keyReused() };
    case 'not-written':
      return undefined;
  }
}

/**
 * A stored answer, replayed: its text as stored; a refusal's values (a
 * status of 400 or more) as they are; a success's values rendered by the
 * operation that stored them (same fingerprint: same kind).
 */
export function replayOf(request: AnyRequest, status: number, answer: StoredAnswer): WriteAnswer {
  if ('body' in answer) return { status, body: answer.body, replayed: true, value: undefined };
  if (status >= 400) return { status, refusal: answer.row as unknown as StoredRefusal, replayed: true };
  const render = request.operation.renderStored;
  if (!render) throw new Error('ledger writer: an answer stored as values for a kind of write that renders none');
  return { status, body: render(answer.row).body, replayed: true, value: undefined };
}

