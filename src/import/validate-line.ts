import { randomUUID } from 'node:crypto';
import { AMOUNT_RULES, CAPACITY_RULES, RATE_RULES } from '../ledger/amount.js';
import { newLedgerId } from '../ledger/ledger-entry.js';
import { PAYMENT_METHOD_TYPES } from '../resources/payment-methods.js';
import { IMPORT_OBJECTS, type ImportObject, type ImportRecord } from './import-record.js';
import { LineFields } from './line-fields.js';
import { parseJsonLine } from './parse-json-line.js';

export type LineValidation = { ok: true; record: ImportRecord } | { ok: false; reason: string };

const DECIMAL_FIELDS: ReadonlySet<string> = new Set(['capacity', 'rate', 'amount']);

const KNOWN_FIELDS: Record<ImportObject, ReadonlySet<string>> = {
  payment_method: new Set(['object', 'uid', 'entity', 'type', 'currency', 'account_number', 'last_2', 'created_at', 'updated_at']),
  credit_limit: new Set(['object', 'uid', 'entity', 'currency', 'capacity', 'rate', 'created_at', 'updated_at']),
  drawdown: new Set(['object', 'id', 'limit', 'amount', 'at']),
  repayment: new Set(['object', 'id', 'limit', 'amount', 'at']),
};

const LEDGER_ONLY = 'changes only through drawdown and repayment lines';
const CREDIT_LIMIT_HINTS = {
  outstanding: `outstanding cannot be imported: it ${LEDGER_ONLY}`,
  balance: `balance cannot be imported: it is capacity − outstanding, and outstanding ${LEDGER_ONLY}`,
};

/** Validates one JSON Lines import line into a record with canonical values. */
export function validateLine(text: string): LineValidation {
  const parsed = parseJsonLine(text, DECIMAL_FIELDS);
  if (!parsed.ok) return parsed;
  const fields = new LineFields(parsed.value);
  const object = parsed.value.object;
  if (typeof object !== 'string' || !(IMPORT_OBJECTS as readonly string[]).includes(object)) {
    return { ok: false, reason: `object must be one of ${IMPORT_OBJECTS.join(', ')}` };
  }
  const record = readRecord(object as ImportObject, fields);
  return fields.problems.length > 0 || !record ? { ok: false, reason: fields.problems.join('; ') } : { ok: true, record };
}

function readRecord(object: ImportObject, fields: LineFields): ImportRecord | undefined {
  switch (object) {
    case 'payment_method': {
      fields.rejectUnknown(KNOWN_FIELDS.payment_method);
      const uid = fields.identifier('uid', false) ?? (fields.has('uid') ? undefined : `pm_${compactUuid()}`);
      const entity = fields.identifier('entity', true);
      const type = fields.oneOf('type', PAYMENT_METHOD_TYPES);
      const currency = fields.currency('currency');
      const last_2 = fields.lastTwo();
      const [created_at, updated_at] = recordTimes(fields);
      if (uid === undefined || entity === undefined || type === undefined || currency === undefined || last_2 === undefined) return undefined;
      return { object, uid, entity, type, currency, last_2, created_at, updated_at };
    }
    case 'credit_limit': {
      fields.rejectUnknown(KNOWN_FIELDS.credit_limit, CREDIT_LIMIT_HINTS);
      const uid = fields.identifier('uid', false) ?? (fields.has('uid') ? undefined : `cl_${compactUuid()}`);
      const entity = fields.identifier('entity', true);
      const currency = fields.currency('currency');
      const capacity = fields.decimal('capacity', CAPACITY_RULES);
      const rate = fields.decimal('rate', RATE_RULES);
      const [created_at, updated_at] = recordTimes(fields);
      if (uid === undefined || entity === undefined || currency === undefined || capacity === undefined || rate === undefined) return undefined;
      return { object, uid, entity, currency, capacity, rate, created_at, updated_at };
    }
    case 'drawdown':
    case 'repayment': {
      fields.rejectUnknown(KNOWN_FIELDS[object]);
      const id = fields.identifier('id', false) ?? (fields.has('id') ? undefined : newLedgerId(object));
      const limit = fields.identifier('limit', true);
      const amount = fields.decimal('amount', AMOUNT_RULES);
      const at = fields.timestamp('at', { notInTheFuture: true });
      if (id === undefined || limit === undefined || amount === undefined) return undefined;
      return { object, id, limit, amount, at };
    }
  }
}

function recordTimes(fields: LineFields): [string | undefined, string | undefined] {
  const created = fields.timestamp('created_at');
  const updated = fields.timestamp('updated_at');
  // Canonical RFC 3339 UTC strings of equal shape compare like the instants.
  if (created !== undefined && updated !== undefined && updated < created) fields.problem('updated_at must not be before created_at');
  return [created, updated];
}

function compactUuid(): string {
  return randomUUID().replaceAll('-', '');
}
