import type { ResourceDefinition } from '../listing/resource-definition.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import { schemaRef, type JsonObject } from './json-schema.js';
import { uidParameter } from './resource-schemas.js';
import { amountSchema, errorResponsesByStatus, ledgerEntryRequestBody, referenceSchema, WRITE_CREATED_HEADERS, WRITE_ERRORS } from './write-operations.js';

const IDEMPOTENCY = `Needs an API key with the \`write\` scope (a read key gets 403 \`insufficient_scope\`) and an \`Idempotency-Key\`: the same key with the same request within 24 hours replays the first answer (with \`Idempotent-Replayed: true\`), a 409 included; with another request it is a 422 \`idempotency_key_reused\`; concurrent requests with one key run once.`;

/** `POST /api/loans/` and `POST /api/loans/{uid}/repayments/` (docs/api.md "Loans"), keyed by path. */
export function loanWriteOperations(loans: ResourceDefinition, limits: ResourceDefinition): Record<string, JsonObject> {
  return {
    [`/api/${loans.path}/`]: {
      operationId: 'createLoan',
      tags: ['Ledger'],
      summary: 'Create a loan',
      description: `Lends \`principal\` on one of your ${limits.name}s, paid out to a payment method of the same entity and currency, in one transaction: the loan is created and a drawdown of its principal is recorded on the limit (its entry's \`loan\` is the new loan's uid). A limit or method that is not your organization's is a 404; a method of another entity or currency is a 422 naming \`payment_method\`; a principal above the limit's \`balance\` is a 409 \`insufficient_balance\`, and nothing is written. ${IDEMPOTENCY}`,
      parameters: [{ $ref: '#/components/parameters/Idempotency-Key' }],
      requestBody: {
        required: true,
        description: `A JSON object of at most ${MAX_WRITE_BODY_BYTES} bytes; any other member is a 422.`,
        content: {
          'application/json': {
            schema: schemaRef('LoanInput'),
            example: { credit_limit: limits.fields.uid?.example ?? 'cl_1', payment_method: 'pm_demo_001', principal: '500.00', reference: 'loan-2024-0042' },
          },
        },
      },
      responses: {
        201: {
          description: `The loan was created: the loan and the ${limits.name} after its drawdown. A replay carries \`Idempotent-Replayed: true\`.`,
          headers: WRITE_CREATED_HEADERS,
          content: { 'application/json': { schema: schemaRef('LoanCreated') } },
        },
        ...errorResponsesByStatus(WRITE_ERRORS),
      },
    },
    [`/api/${loans.path}/{uid}/repayments/`]: {
      operationId: 'createLoanRepayment',
      tags: ['Ledger'],
      summary: 'Repay a loan',
      description: `Records a repayment of one of your loans: the loan's \`outstanding\` and its ${limits.name}'s fall together (one entry, linked to the loan); the repayment that brings the loan to zero makes it \`repaid\`. More than the loan's outstanding (or than its limit's, if direct repayments lowered that below the loan's) is a 409 \`repayment_exceeds_outstanding\`, and nothing is written. ${IDEMPOTENCY}`,
      parameters: [uidParameter(loans), { $ref: '#/components/parameters/Idempotency-Key' }],
      requestBody: ledgerEntryRequestBody({ amount: '100.00', reference: 'repayment-2024-0042' }),
      responses: {
        201: {
          description: `The repayment was recorded: the entry, the loan and the ${limits.name} after it. A replay carries \`Idempotent-Replayed: true\`.`,
          headers: WRITE_CREATED_HEADERS,
          content: { 'application/json': { schema: schemaRef('LoanRepaymentResult') } },
        },
        ...errorResponsesByStatus(WRITE_ERRORS),
      },
    },
  };
}

/** The schemas the loan writes refer to (LedgerEntryInput and LedgerEntry come with the ledger's writes). */
export function loanWriteSchemas(loans: ResourceDefinition, limits: ResourceDefinition): Record<string, JsonObject> {
  const uid = (what: string) => ({ type: 'string', minLength: 1, maxLength: 255, description: `UID of the ${what} (yours).` });
  return {
    LoanInput: {
      title: 'LoanInput',
      description: 'A loan to create.',
      type: 'object',
      required: ['credit_limit', 'payment_method', 'principal'],
      properties: {
        credit_limit: uid('credit limit it draws on'),
        payment_method: uid('payment method the principal is paid out to: same entity and currency as the limit'),
        principal: amountSchema('Amount lent: positive, at most two decimal places, below 10^13; a JSON string ("5000.00") or number, read exactly.', '5000.00'),
        reference: referenceSchema('Your own id for the loan, no control characters.'),
      },
      additionalProperties: false,
    },
    LoanCreated: {
      title: 'LoanCreated',
      type: 'object',
      required: ['loan', 'limit'],
      properties: { loan: schemaRef(loans.schemaName), limit: schemaRef(limits.schemaName) },
      additionalProperties: false,
    },
    LoanRepaymentResult: {
      title: 'LoanRepaymentResult',
      type: 'object',
      required: ['entry', 'loan', 'limit'],
      properties: { entry: schemaRef('LedgerEntry'), loan: schemaRef(loans.schemaName), limit: schemaRef(limits.schemaName) },
      additionalProperties: false,
    },
  };
}
