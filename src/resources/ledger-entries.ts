import type { ResourceDefinition } from '../listing/resource-definition.js';
import { timestampFrom, timestampTo } from '../listing/value-parsers.js';
import { MAX_REFERENCE_LENGTH } from '../ledger/write-limits.js';
import { createdAtField, timeRangeFilters, UID_BOUNDS } from './common-fields.js';
import { creditLimits } from './credit-limits.js';

/**
 * A credit limit's drawdowns and repayments: `/api/limits/{uid}/entries/`.
 *
 * created_at is when the service recorded the entry (recorded_at), not the
 * entry's own `at`: recording time only moves forward as entries arrive, so
 * "newest first" shows what just happened, and `created_from` finds what
 * was recorded since a client last looked, even an entry backdated with an
 * earlier `at`. `at` is a field, an ordering and a range filter of its own.
 *
 * Not importable as a collection (ledger lines stay their own kind in the
 * import) and no retrieve route: entries are read through their limit.
 */
export const ledgerEntries: ResourceDefinition = {
  path: 'entries',
  // Never changed once recorded.
  events: { object: 'ledger_entry', types: ['created'] },
  name: 'ledger entry',
  schemaName: 'LedgerEntry',
  description:
    "A drawdown or repayment of a credit limit, as recorded: entries are never changed or deleted, and the limit's outstanding is their sum.",
  table: 'ledger_entries',
  parent: { resource: creditLimits, column: 'limit_id' },
  // The entry's id is the caller's text key; seq is the unique order of recording (migration 011).
  rowId: 'seq',
  fields: {
    id: { column: 'id', type: 'string', description: "The entry's id, unique in the organization: recording the same id again changes nothing.", example: 'dd_2024_0001', ...UID_BOUNDS },
    kind: { column: 'kind', type: 'string', description: 'drawdown (outstanding grows) or repayment (it shrinks).', example: 'drawdown', enum: ['drawdown', 'repayment'] },
    amount: { column: 'amount', type: 'decimal', description: 'Amount moved, in the limit\'s currency; always positive.', example: 250.5 },
    at: {
      column: 'at',
      type: 'timestamp',
      description: 'When the money moved, as the writer said (it may be earlier than created_at): RFC 3339, UTC, always six fractional digits.',
      example: '2024-05-01T09:30:00.000000Z',
    },
    reference: {
      column: 'reference',
      type: 'string',
      description: "The writer's own reference (e.g. a loan or payment id); null when none was given.",
      example: 'loan-8812',
      nullable: true,
      maxLength: MAX_REFERENCE_LENGTH,
    },
    loan: {
      column: 'loan',
      type: 'string',
      description: 'UID of the loan the entry belongs to (its principal, or a repayment of it); null for a direct drawdown or repayment.',
      example: 'ln_demo_01',
      nullable: true,
      ...UID_BOUNDS,
      addedWithinVersion: true,
    },
    key_id: {
      column: 'key_id',
      type: 'string',
      description: 'Id of the API key that wrote the entry (as `key list` shows it); null for entries from the CLI or the import.',
      example: 'key_0123456789abcdef',
      nullable: true,
      maxLength: 20,
      pattern: '^key_[0-9a-f]{16}$',
    },
    created_at: {
      ...createdAtField,
      column: 'recorded_at',
      description: 'When the service recorded the entry: RFC 3339, UTC, always six fractional digits. Lists are newest first by it.',
    },
  },
  filters: [
    ...timeRangeFilters.filter((filter) => filter.field === 'created_at'),
    { param: 'at_from', field: 'at', operator: '>=', value: timestampFrom, description: 'Money moved (at) on or after this time.' },
    { param: 'at_to', field: 'at', operator: '<=', value: timestampTo, description: 'Money moved (at) on or before this time.' },
  ],
  orderings: ['created_at', 'at'],
  defaultOrdering: '-created_at',
};
