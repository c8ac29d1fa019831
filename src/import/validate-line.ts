import { randomUUID } from 'node:crypto';
import { AMOUNT_RULES } from '../domain/amount.js';
import { LEDGER_KINDS, newLedgerId, type LedgerKind } from '../ledger/ledger-entry.js';
import type { ImportField } from '../listing/resource-definition.js';
import { truncate } from '../domain/truncate.js';
import { IMPORT_OBJECTS, type ImportRecord } from './import-record.js';
import { LineFields } from './line-fields.js';
import { parseJsonLine } from './parse-json-line.js';
import { RECORD_KINDS, type RecordKind } from './record-kinds.js';

export type LineValidation = { ok: true; record: ImportRecord } | { ok: false; reason: string };

const DECIMAL_FIELDS: ReadonlySet<string> = new Set([...RECORD_KINDS.decimalFields, 'amount']);
const LEDGER_FIELDS: ReadonlySet<string> = new Set(['object', 'id', 'limit', 'amount', 'at']);

/** Validates one JSON Lines import line into a record with canonical values. */
export function validateLine(text: string): LineValidation {
  const parsed = parseJsonLine(text, DECIMAL_FIELDS);
  if (!parsed.ok) return parsed;
  const fields = new LineFields(parsed.value);
  const object = parsed.value.object;
  const kind = typeof object === 'string' ? RECORD_KINDS.byObject(object) : undefined;
  let record: ImportRecord | undefined;
  if (kind) record = readRecord(kind, fields);
  else if ((LEDGER_KINDS as readonly unknown[]).includes(object)) record = readLedgerLine(object as LedgerKind, fields);
  else return { ok: false, reason: unknownObject(object) };
  return fields.problems.length > 0 || !record ? { ok: false, reason: fields.problems.join('; ') } : { ok: true, record };
}

function unknownObject(object: unknown): string {
  const objects = IMPORT_OBJECTS.join(', ');
  if (object === undefined || object === null) return `object is required: one of ${objects}`;
  return `object must be one of ${objects}, got ${typeof object === 'string' ? `'${truncate(object)}'` : `a ${Array.isArray(object) ? 'list' : typeof object}`}`;
}

/** A line of a collection, read field by field as its definition says. */
function readRecord(kind: RecordKind, fields: LineFields): ImportRecord | undefined {
  fields.rejectUnknown(kind.known, kind.refused);
  const uid = fields.identifier('uid', false) ?? (fields.has('uid') ? undefined : `${kind.uidPrefix}_${compactUuid()}`);
  const values: (string | null)[] = [];
  for (const [column, field] of kind.fields) {
    const value = field.optional && !fields.has(column) ? null : readField(fields, column, field);
    if (value !== undefined) values.push(value);
  }
  const [created_at, updated_at] = recordTimes(fields);
  if (uid === undefined || values.length < kind.fields.length) return undefined;
  return { line: 'record', kind, uid, values, created_at, updated_at };
}

function readField(fields: LineFields, name: string, field: ImportField): string | undefined {
  switch (field.kind) {
    case 'identifier':
      return fields.identifier(name, true);
    case 'text':
      return fields.text(name, field.maxLength);
    case 'enum':
      return fields.oneOf(name, field.values);
    case 'currency':
      return fields.currency(name);
    case 'country':
      return fields.country(name);
    case 'decimal':
      return fields.decimal(name, { maxIntegerDigits: field.precision - field.scale, maxFractionDigits: field.scale, allowZero: field.allowZero });
    case 'last-two-digits':
      return fields.lastTwo(field.source, name);
  }
}

function readLedgerLine(object: LedgerKind, fields: LineFields): ImportRecord | undefined {
  fields.rejectUnknown(LEDGER_FIELDS);
  const id = fields.identifier('id', false) ?? (fields.has('id') ? undefined : newLedgerId(object));
  const limit = fields.identifier('limit', true);
  const amount = fields.decimal('amount', AMOUNT_RULES);
  const at = fields.timestamp('at', { notInTheFuture: true });
  if (id === undefined || limit === undefined || amount === undefined) return undefined;
  return { line: 'ledger', object, id, limit, amount, at };
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
