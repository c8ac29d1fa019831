import { ERROR_CODES, PROBLEM_CONTENT_TYPE, type ErrorCode } from '../domain/errors.js';
import { LEDGER_KINDS, type LedgerKind } from '../ledger/ledger-entry.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import { schemaRef, type JsonObject } from './json-schema.js';
import { capitalize, plural } from './plural.js';
import { problemResponseRef } from './problem-responses.js';
import { TIMESTAMP_PATTERN, uidParameter } from './resource-schemas.js';

/** Problems a write can answer besides its 201 (SPEC §3a), in the order the server checks them. */
const WRITE_ERRORS = [
  'idempotency_key_missing',
  'idempotency_key_invalid',
  'invalid_json',
  'unauthorized',
  'insufficient_scope',
  'not_found',
  'payload_too_large',
  'unsupported_media_type',
  'invalid_body',
  'idempotency_key_reused',
  'rate_limited',
  'internal_error',
  'service_unavailable',
] as const satisfies readonly ErrorCode[];

const REFUSAL: Record<LedgerKind, ErrorCode> = { drawdown: 'insufficient_balance', repayment: 'repayment_exceeds_outstanding' };

const PROSE: Record<LedgerKind, { summary: string; effect: string }> = {
  drawdown: { summary: 'Record a drawdown', effect: '`outstanding` rises and `balance` falls by `amount`; more than the balance is a 409 `insufficient_balance`' },
  repayment: { summary: 'Record a repayment', effect: '`outstanding` falls and `balance` rises by `amount`; more than `outstanding` is a 409 `repayment_exceeds_outstanding`' },
};

/** `POST /api/{limits}/{uid}/drawdowns/` and `…/repayments/`: the ledger writes on `resource`'s records. */
export function writePaths(resource: ResourceDefinition): Record<string, JsonObject> {
  return Object.fromEntries(LEDGER_KINDS.map((kind) => [`/api/${resource.path}/{uid}/${kind}s/`, { post: writeOperation(resource, kind) }]));
}

export function writeSchemas(resource: ResourceDefinition): Record<string, JsonObject> {
  return {
    LedgerEntryRequest: {
      title: 'LedgerEntryRequest',
      description: 'A drawdown or repayment to record. No other members.',
      type: 'object',
      required: ['amount'],
      properties: {
        amount: {
          type: ['string', 'number'],
          pattern: '^[0-9]+(\\.[0-9]{1,2})?$',
          description: 'A positive decimal with at most 2 fractional digits; as a string to keep it exact.',
          examples: ['1200.00'],
        },
        at: { type: 'string', format: 'date-time', description: "The entry's own time (RFC 3339), never in the future; default now.", examples: ['2025-01-06T09:00:00Z'] },
        reference: { type: 'string', minLength: 1, maxLength: 255, description: 'Your own reference, such as a loan or invoice id.', examples: ['loan-17'] },
      },
      additionalProperties: false,
    },
    LedgerEntry: {
      title: 'LedgerEntry',
      description: 'One recorded drawdown or repayment. Entries are never edited or deleted.',
      type: 'object',
      required: ['id', 'kind', 'limit', 'amount', 'at', 'reference', 'key_id', 'created_at'],
      properties: {
        id: { type: 'string', description: 'Stable identifier (`dd_…`, `rp_…`).' },
        kind: { enum: [...LEDGER_KINDS], description: 'What the entry did.' },
        limit: { type: 'string', description: `UID of the ${resource.name}.` },
        amount: { type: 'number', description: 'The amount, exact to the cent.' },
        at: { type: 'string', format: 'date-time', pattern: TIMESTAMP_PATTERN, description: "The entry's own time." },
        reference: { type: ['string', 'null'], description: 'The reference it was sent with.' },
        key_id: { type: ['string', 'null'], description: 'The API key that wrote it; null for entries from the CLI or an import.' },
        created_at: { type: 'string', format: 'date-time', pattern: TIMESTAMP_PATTERN, description: 'When it was recorded.' },
      },
      additionalProperties: false,
    },
    LedgerEntryResult: {
      title: 'LedgerEntryResult',
      description: `The answer to a write: the entry, and the ${resource.name} after it.`,
      type: 'object',
      required: ['entry', 'limit'],
      properties: { entry: schemaRef('LedgerEntry'), limit: schemaRef(resource.schemaName) },
      additionalProperties: false,
    },
  };
}

function writeOperation(resource: ResourceDefinition, kind: LedgerKind): JsonObject {
  const refusal = REFUSAL[kind];
  return {
    operationId: `create${capitalize(kind)}`,
    tags: [capitalize(plural(resource.name))],
    summary: PROSE[kind].summary,
    description:
      `Records a ${kind} on one ${resource.name} of your organization: ${PROSE[kind].effect}, and nothing is written. ` +
      'Needs a key created with the write scope (`key create --scope write`); a read key gets a 403 `insufficient_scope`.\n\n' +
      '**Idempotency.** Send a unique `Idempotency-Key` per logical write and the same one on its retries: within 24 h the same key with the same body ' +
      'replays the first answer (same status and body, header `Idempotent-Replayed: true`); with another body it is a 422 `idempotency_key_reused`. ' +
      'Two requests with one key at once run once: the second waits for the first and replays it.',
    parameters: [
      uidParameter(resource),
      {
        name: 'Idempotency-Key',
        in: 'header',
        required: true,
        description: 'A unique value per logical write (a UUID, your loan id), reused on its retries. 1–255 printable ASCII characters.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      },
    ],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: schemaRef('LedgerEntryRequest'), example: { amount: '100.00', reference: 'loan-17' } } },
    },
    responses: {
      201: {
        description: `The ${kind}, recorded (or, with \`Idempotent-Replayed: true\`, the first answer to this Idempotency-Key).`,
        headers: {
          'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
          'Idempotent-Replayed': { description: 'Present (`true`) when this is the stored answer to an earlier request with the same key.', schema: { const: 'true' } },
        },
        content: { 'application/json': { schema: schemaRef('LedgerEntryResult') } },
      },
      ...problemsByStatus([...WRITE_ERRORS, refusal]),
    },
  };
}

/** One response per status; a status several codes share documents them all (its problem's `code` is one of them). */
function problemsByStatus(codes: readonly ErrorCode[]): Record<string, JsonObject> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_CODES[code].status, [...(byStatus.get(ERROR_CODES[code].status) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, shared]) => {
      if (shared.length === 1 && shared[0]) return [String(status), problemResponseRef(shared[0])];
      return [
        String(status),
        {
          description: shared.map((code) => `${ERROR_CODES[code].title} (\`${code}\`)`).join('; '),
          headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
          content: { [PROBLEM_CONTENT_TYPE]: { schema: { allOf: [schemaRef('Problem'), { type: 'object', properties: { status: { const: status }, code: { enum: shared } } }] } } },
        },
      ];
    }),
  );
}
