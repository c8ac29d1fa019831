import type { ListSpec } from '../components/list-view';
import type { FilterSpec } from '../components/filter-form';
import { money, when } from '../lib/format';
import type { CreditLimit, Entity, Loan, PaymentMethod } from '../lib/records';
import { href } from '../lib/router';

/** The four collections with every filter and order_by of the API (docs/api.md "Parameters"). */
const TIMES: FilterSpec[] = [
  { name: 'created_from', label: 'Created from', kind: 'time' },
  { name: 'created_to', label: 'Created to', kind: 'time' },
  { name: 'updated_from', label: 'Updated from', kind: 'time' },
  { name: 'updated_to', label: 'Updated to', kind: 'time' },
];
const ENTITY: FilterSpec = { name: 'entity', label: 'Entity UID', kind: 'text', hint: 'Exact, such as ent_demo_03.' };
const CURRENCY: FilterSpec = { name: 'currency', label: 'Currency', kind: 'text', hint: 'ISO 4217 code, such as USD.' };

const entityLink = (uid: string) => <a href={href('limits', { entity: uid })} title="This entity's credit limits">{uid}</a>;
const limitLink = (uid: string) => <a href={href(`limits/${uid}`)}>{uid}</a>;
const time = (value: string) => <time dateTime={value}>{when(value)}</time>;

export const METHODS: ListSpec<PaymentMethod> = {
  title: 'Payment methods',
  noun: 'payment methods',
  route: 'methods',
  apiPath: '/api/methods/',
  filters: [ENTITY, CURRENCY, ...TIMES],
  orderBy: ['created_at', 'updated_at', 'currency', 'type', 'entity'],
  columns: [
    { label: 'UID', cell: (m) => m.uid },
    { label: 'Entity', cell: (m) => entityLink(m.entity) },
    { label: 'Type', cell: (m) => m.type },
    { label: 'Currency', cell: (m) => m.currency },
    { label: 'Account ends', cell: (m) => `…${m.last_2}` },
    { label: 'Created', cell: (m) => time(m.created_at) },
    { label: 'Updated', cell: (m) => time(m.updated_at) },
  ],
};

export const LIMITS: ListSpec<CreditLimit> = {
  title: 'Credit limits',
  noun: 'credit limits',
  route: 'limits',
  apiPath: '/api/limits/',
  filters: [ENTITY, ...TIMES],
  orderBy: ['created_at', 'updated_at', 'capacity', 'outstanding', 'balance', 'entity'],
  columns: [
    { label: 'UID', cell: (l) => limitLink(l.uid) },
    { label: 'Entity', cell: (l) => entityLink(l.entity) },
    { label: 'Capacity', cell: (l) => money(l.capacity, l.currency), numeric: true },
    { label: 'Outstanding', cell: (l) => money(l.outstanding, l.currency), numeric: true },
    { label: 'Balance', cell: (l) => money(l.balance, l.currency), numeric: true },
    { label: 'Rate', cell: (l) => String(l.rate), numeric: true },
    { label: 'Updated', cell: (l) => time(l.updated_at) },
  ],
};

export const ENTITIES: ListSpec<Entity> = {
  title: 'Entities',
  noun: 'entities',
  route: 'entities',
  apiPath: '/api/entities/',
  filters: [{ name: 'country', label: 'Country', kind: 'text', hint: 'ISO 3166-1 alpha-2 code, such as FR.' }, ...TIMES],
  orderBy: ['created_at', 'updated_at', 'name', 'country'],
  columns: [
    { label: 'UID', cell: (e) => e.uid },
    { label: 'Name', cell: (e) => e.name },
    { label: 'Country', cell: (e) => e.country },
    { label: 'Credit limits', cell: (e) => <a href={href('limits', { entity: e.uid })}>limits</a> },
    { label: 'Payment methods', cell: (e) => <a href={href('methods', { entity: e.uid })}>methods</a> },
    { label: 'Created', cell: (e) => time(e.created_at) },
  ],
};

export const LOANS: ListSpec<Loan> = {
  title: 'Loans',
  noun: 'loans',
  route: 'loans',
  apiPath: '/api/loans/',
  filters: [
    ENTITY,
    CURRENCY,
    { name: 'status', label: 'Status', kind: 'choice', choices: ['active', 'repaid'] },
    { name: 'credit_limit', label: 'Credit limit UID', kind: 'text', hint: 'Exact, such as cl_demo_01_usd.' },
    ...TIMES,
  ],
  orderBy: ['created_at', 'updated_at', 'principal', 'outstanding'],
  columns: [
    { label: 'UID', cell: (l) => l.uid },
    { label: 'Entity', cell: (l) => entityLink(l.entity) },
    { label: 'Credit limit', cell: (l) => limitLink(l.credit_limit) },
    { label: 'Payment method', cell: (l) => l.payment_method },
    { label: 'Principal', cell: (l) => money(l.principal, l.currency), numeric: true },
    { label: 'Outstanding', cell: (l) => money(l.outstanding, l.currency), numeric: true },
    { label: 'Status', cell: (l) => l.status },
    { label: 'Created', cell: (l) => time(l.created_at) },
  ],
};
