import { ERROR_CODES, PROBLEM_CONTENT_TYPE, type ErrorCode } from '../domain/errors.js';
import { LEDGER_KINDS, type LedgerKind } from '../ledger/ledger-entry.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH, MAX_REFERENCE_LENGTH, MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import { MAX_TIMESTAMP_TEXT_LENGTH } from '../domain/timestamp.js';
import { DECIMAL_PATTERN } from '../domain/decimal.js';
import { schemaRef, type JsonObject } from './json-schema.js';
import { codesByStatus, problemHeadersOf, problemResponseRef } from './problem-responses.js';
import { uidParameter } from './resource-schemas.js';

/** Problems a write can answer besides its 201, grouped by status in the document. */
export const WRITE_ERRORS = [
  'bad_request',
  'invalid_json',
  'idempotency_key_missing',
  'idempotency_key_invalid',
  'unauthorized',
  'insufficient_scope',
  'not_found',
  'insufficient_balance',
  'repayment_exceeds_outstanding',
  'payload_too_large',
  'unsupported_media_type',
  'invalid_body',
  'idempotency_key_reused',
  'rate_limited',
  'internal_error',
  'service_unavailable',
  'overloaded',
  'outcome_unknown',
] as const satisfies readonly ErrorCode[];

const KIND_TEXT: Record<LedgerKind, { summary: string; operationId: string; effect: string; refusal: string }> = {
  drawdown: {
    summary: 'Record a drawdown',
    operationId: 'createDrawdown',
    effect: 'raises the limit’s `outstanding` (and lowers its `balance`)',
    refusal: 'A drawdown larger than the `balance` is refused with 409 `insufficient_balance`.',
  },
  repayment: {
    summary: 'Record a repayment',
    operationId: 'createRepayment',
    effect: 'lowers the limit’s `outstanding` (and raises its `balance`)',
    refusal: 'A repayment larger than `outstanding` is refused with 409 `repayment_exceeds_outstanding`.',
  },
};

/** `POST /api/{limits}/{uid}/drawdowns/` and `…/repayments/` (docs/api.md "Writes"). */
/** The headers of a write's 201 (and of its replay). */
export const WRITE_CREATED_HEADERS: JsonObject = {
  'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
  'Idempotent-Replayed': { $ref: '#/components/headers/Idempotent-Replayed' },
};

/**
 * An amount as a JSON string: decimal text (its value is checked after: positive, two decimal places,
 * below 10^13), as long as a body may be. As a JSON number it is read from its text the same way.
 */
export function amountSchema(description: string, example: string): JsonObject {
  return { type: ['string', 'number'], maxLength: MAX_WRITE_BODY_BYTES, pattern: DECIMAL_PATTERN.source, description, examples: [example] };
}

/** A client's reference: 1–MAX_REFERENCE_LENGTH characters, none of them a control character (C0, DEL, C1). */
export function referenceSchema(description: string): JsonObject {
  return { type: 'string', minLength: 1, maxLength: MAX_REFERENCE_LENGTH, pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]+$', description };
}

/** The body of a POST that records one ledger entry (a drawdown, a repayment, a loan's repayment). */
export function ledgerEntryRequestBody(example: JsonObject): JsonObject {
  return {
    required: true,
    description: `A JSON object of at most ${MAX_WRITE_BODY_BYTES} bytes; any other member is a 422.`,
    content: { 'application/json': { schema: schemaRef('LedgerEntryInput'), example } },
  };
}

export function writePaths(limits: ResourceDefinition): Record<string, JsonObject> {
  return Object.fromEntries(LEDGER_KINDS.map((kind) => [`/api/${limits.path}/{uid}/${kind}s/`, { post: writeOperation(limits, kind) }]));
}

function writeOperation(limits: ResourceDefinition, kind: LedgerKind): JsonObject {
  const text = KIND_TEXT[kind];
  return {
    operationId: text.operationId,
    tags: ['Ledger'],
    summary: text.summary,
    description: `Records a ${kind} against one of your organization's ${limits.name}s: it ${text.effect} at once. ${text.refusal} Needs an API key with the \`write\` scope (a read key gets 403 \`insufficient_scope\`) and an \`Idempotency-Key\`: the same key with the same request within 24 hours replays the first answer (with \`Idempotent-Replayed: true\`); with another request it is a 422 \`idempotency_key_reused\`; concurrent requests with one key run once (the later ones wait for the first). Writes have their own per-key rate limit.`,
    parameters: [uidParameter(limits), { $ref: '#/components/parameters/Idempotency-Key' }],
    requestBody: ledgerEntryRequestBody({ amount: '1200.00', reference: 'loan-2024-0042' }),
    responses: {
      201: {
        description: `The ${kind} was recorded: the entry and the ${limits.name} after it. A replay carries \`Idempotent-Replayed: true\`.`,
        headers: WRITE_CREATED_HEADERS,
        content: { 'application/json': { schema: schemaRef('LedgerWriteResult') } },
      },
      ...errorResponsesByStatus(WRITE_ERRORS),
    },
  };
}

/**
 * Refusals stored under the Idempotency-Key like a 201, and replayed with
 * `Idempotent-Replayed: true` (src/http/record-write.ts STORED_REFUSALS).
 */
const REPLAYED_REFUSALS: readonly ErrorCode[] = ['insufficient_balance', 'repayment_exceeds_outstanding'];

/** One response per status; a status several codes share lists them all. */
export function errorResponsesByStatus(codes: readonly ErrorCode[]): Record<string, JsonObject> {
  return Object.fromEntries(
    [...codesByStatus(codes)].map(([status, shared]) => {
      const [only] = shared;
      if (shared.length === 1 && only) return [status, problemResponseRef(only)];
      return [
        status,
        {
          description: shared.map((code) => `${ERROR_CODES[code].title} (\`${code}\`)`).join('; '),
          headers: {
            'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
            ...problemHeadersOf(shared),
            ...(shared.some((code) => REPLAYED_REFUSALS.includes(code)) ? { 'Idempotent-Replayed': { $ref: '#/components/headers/Idempotent-Replayed' } } : {}),
          },
          content: {
            [PROBLEM_CONTENT_TYPE]: {
              schema: { allOf: [schemaRef('Problem'), { type: 'object', properties: { status: { const: Number(status) }, code: { enum: shared } } }] },
            },
          },
        },
      ];
    }),
  );
}

/** Schemas, parameters and headers the write operations refer to. */
export function writeComponents(limits: ResourceDefinition): { schemas: Record<string, JsonObject>; parameters: Record<string, JsonObject>; headers: Record<string, JsonObject> } {
  return {
    schemas: {
      LedgerEntryInput: {
        title: 'LedgerEntryInput',
        description: 'A drawdown or repayment to record.',
        type: 'object',
        required: ['amount'],
        properties: {
          amount: amountSchema('Positive, at most two decimal places, below 10^13; a JSON string ("1200.50") or number, read exactly (never through a binary float).', '1200.00'),
          at: {
            type: 'string',
            format: 'date-time',
            maxLength: MAX_TIMESTAMP_TEXT_LENGTH,
            description: "The entry's own time, RFC 3339 with an offset; never in the future. Default: now. The limit's updated_at moves to the time of the write, whatever this says.",
          },
          reference: referenceSchema('Your own reference (a loan or invoice number), no control characters.'),
        },
        additionalProperties: false,
      },
      LedgerWriteResult: {
        title: 'LedgerWriteResult',
        type: 'object',
        required: ['entry', 'limit'],
        properties: {
          entry: schemaRef('LedgerEntry'),
          limit: schemaRef(limits.schemaName),
        },
        additionalProperties: false,
      },
    },
    parameters: {
      'Idempotency-Key': {
        name: 'Idempotency-Key',
        in: 'header',
        required: true,
        description: `A unique value per logical write (a UUID), reused on its retries; 1–${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters, scoped to your organization, remembered 24 hours.`,
        // Printable ASCII, as src/http/idempotency-key-header.ts checks.
        schema: { type: 'string', minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH, pattern: '^[\\x20-\\x7e]+$' },
      },
    },
    headers: {
      'Idempotent-Replayed': {
        description: '`true` when the answer is the stored first answer to this Idempotency-Key (nothing was written again); absent otherwise.',
        required: false,
        schema: { const: 'true' },
      },
    },
  };
}
