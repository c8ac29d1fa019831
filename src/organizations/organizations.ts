// Organizations, the tenants: every record, API key and ledger entry belongs to one.
import { randomBytes } from 'node:crypto';
import { DomainError } from '../domain/domain-error.js';
import type { Queryable } from '../store/store.js';

export interface Organization {
  readonly id: string;
  readonly uid: string;
  readonly name: string;
}

const ORG_UID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

export function newOrganizationUid(): string {
  return `org_${randomBytes(8).toString('hex')}`;
}

export async function createOrganization(db: Queryable, name: string, uid = newOrganizationUid()): Promise<Organization> {
  if (!ORG_UID_PATTERN.test(uid)) throw new DomainError(`organization uid must be 1–64 letters, digits, '_', '.' or '-', got '${uid}'`);
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200) throw new DomainError('organization name must be 1–200 characters');
  const rows = await db.query<{ id: string }>(
    'INSERT INTO organizations (uid, name) VALUES ($1, $2) ON CONFLICT (uid) DO NOTHING RETURNING id::text AS id',
    [uid, trimmed],
  );
  const row = rows[0];
  if (!row) throw new DomainError(`organization '${uid}' already exists`);
  return { id: row.id, uid, name: trimmed };
}

export async function findOrganization(db: Queryable, uid: string): Promise<Organization | undefined> {
  const rows = await db.query<Organization>('SELECT id::text AS id, uid, name FROM organizations WHERE uid = $1', [uid]);
  return rows[0];
}

export async function requireOrganization(db: Queryable, uid: string): Promise<Organization> {
  const org = await findOrganization(db, uid);
  if (!org) throw new DomainError(`no organization '${uid}'`);
  return org;
}
