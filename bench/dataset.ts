/**
 * The benchmark's synthetic dataset: a pure function of (seed, scale), so a
 * run can be reproduced exactly and the harness can tell whether the loaded
 * data is the one it would generate. Any record can be recomputed from its
 * index alone, which lets scenarios ask for entities that really exist.
 */

/** Bumped whenever generation changes, so a dataset loaded by older code is not reused. */
export const GENERATOR_VERSION = 2;
export const FULL_PAYMENT_METHODS = 10_000_000;
export const FULL_CREDIT_LIMITS = 4_000_000;
export const ORGANIZATIONS = 100;
/** The dataset's "now": timestamps lie in the two years before it. */
export const REFERENCE_TIME_MS = Date.UTC(2025, 0, 1);
const DAY_MS = 86_400_000;
const SPAN_DAYS = 730;
/** Share of records updated in the last day before the reference time (the incremental-sync scenario). */
const RECENTLY_UPDATED = 0.005;
const METHODS_PER_ENTITY = 5;

const CURRENCIES = ['USD', 'USD', 'USD', 'EUR', 'EUR', 'GBP', 'CAD', 'AUD', 'JPY', 'CHF', 'SEK', 'MXN'];
const TYPES = ['ACH', 'ACH', 'SEPA', 'BACS', 'WIRE', 'CARD'];

export interface DatasetSpec {
  readonly seed: number;
  readonly scale: number;
}

export interface OrganizationShape {
  readonly index: number;
  readonly uid: string;
  readonly paymentMethods: number;
  readonly creditLimits: number;
  readonly entities: number;
}

/**
 * 100 organizations, skewed: the largest holds half of each table and the
 * other 99 share the rest in proportion to 1/rank (Zipf), each at least one.
 */
export function organizations(spec: DatasetSpec): OrganizationShape[] {
  const totalMethods = Math.max(ORGANIZATIONS * 2, Math.round(FULL_PAYMENT_METHODS * spec.scale));
  const totalLimits = Math.max(ORGANIZATIONS * 2, Math.round(FULL_CREDIT_LIMITS * spec.scale));
  const harmonic = Array.from({ length: ORGANIZATIONS - 1 }, (_, i) => 1 / (i + 1)).reduce((a, b) => a + b, 0);
  const share = (index: number) => (index === 0 ? 0.5 : 0.5 / index / harmonic);
  return Array.from({ length: ORGANIZATIONS }, (_, index) => {
    const paymentMethods = Math.max(1, Math.round(totalMethods * share(index)));
    return {
      index,
      uid: `bench_org_${String(index).padStart(3, '0')}`,
      paymentMethods,
      creditLimits: Math.max(1, Math.round(totalLimits * share(index))),
      entities: Math.max(1, Math.ceil(paymentMethods / METHODS_PER_ENTITY)),
    };
  });
}

export interface PaymentMethodRecord {
  readonly object: 'payment_method';
  readonly uid: string;
  readonly entity: string;
  readonly type: string;
  readonly currency: string;
  readonly last_2: string;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface CreditLimitRecord {
  readonly object: 'credit_limit';
  readonly uid: string;
  readonly entity: string;
  readonly currency: string;
  readonly capacity: string;
  readonly rate: string;
  readonly created_at: string;
  readonly updated_at: string;
}

export function paymentMethodAt(spec: DatasetSpec, org: OrganizationShape, k: number): PaymentMethodRecord {
  const random = mulberry32(mix(spec.seed, org.index, 1, k));
  const [createdAt, updatedAt] = timestamps(random);
  return {
    object: 'payment_method',
    uid: `pm_${org.index}_${k}`,
    entity: entityUid(org, Math.floor(random() * org.entities)),
    type: pick(TYPES, random),
    currency: pick(CURRENCIES, random),
    last_2: String(Math.floor(random() * 100)).padStart(2, '0'),
    created_at: createdAt,
    updated_at: updatedAt,
  };
}

export function creditLimitAt(spec: DatasetSpec, org: OrganizationShape, k: number): CreditLimitRecord {
  const random = mulberry32(mix(spec.seed, org.index, 2, k));
  const [createdAt, updatedAt] = timestamps(random);
  return {
    object: 'credit_limit',
    uid: `cl_${org.index}_${k}`,
    entity: entityUid(org, Math.floor(random() * org.entities)),
    currency: pick(CURRENCIES, random),
    capacity: (Math.floor(random() * 100_000_000) / 100 + 1000).toFixed(2),
    rate: (0.0001 + Math.floor(random() * 9000) / 10_000_000).toFixed(7),
    created_at: createdAt,
    updated_at: updatedAt,
  };
}

/** Every record of one organization as JSON Lines, in chunks of many lines. */
export async function* organizationJsonLines(spec: DatasetSpec, org: OrganizationShape, linesPerChunk = 2000): AsyncGenerator<string> {
  let chunk: string[] = [];
  const flush = () => {
    const text = chunk.join('');
    chunk = [];
    return text;
  };
  for (let k = 0; k < org.paymentMethods; k++) {
    chunk.push(JSON.stringify(paymentMethodAt(spec, org, k)) + '\n');
    if (chunk.length >= linesPerChunk) yield flush();
  }
  for (let k = 0; k < org.creditLimits; k++) {
    chunk.push(JSON.stringify(creditLimitAt(spec, org, k)) + '\n');
    if (chunk.length >= linesPerChunk) yield flush();
  }
  if (chunk.length > 0) yield flush();
}

export function entityUid(org: OrganizationShape, n: number): string {
  return `ent_${org.index}_${n}`;
}

/** created_at in the two years before the reference time; updated_at after it, a few within the last day. */
function timestamps(random: () => number): [string, string] {
  const referenceMicros = REFERENCE_TIME_MS * 1000;
  const created = referenceMicros - 1 - Math.floor(random() * SPAN_DAYS * DAY_MS * 1000);
  const dayAgo = referenceMicros - DAY_MS * 1000;
  const recentFrom = Math.max(created, dayAgo);
  const updated =
    random() < RECENTLY_UPDATED
      ? recentFrom + Math.floor(random() * (referenceMicros - recentFrom))
      : created + Math.floor(random() * Math.max(0, dayAgo - created - 1));
  return [formatMicros(created), formatMicros(updated)];
}

export function formatMicros(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const fraction = String(micros - ms * 1000 + (ms % 1000) * 1000).padStart(6, '0');
  return `${new Date(ms).toISOString().slice(0, 19)}.${fraction}Z`;
}

function pick<T>(values: readonly T[], random: () => number): T {
  return values[Math.floor(random() * values.length)] as T;
}

/** A 32-bit seed from the record's coordinates. */
function mix(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const part of parts) {
    h = Math.imul(h ^ (part & 0xffff), 0x01000193);
    h = Math.imul(h ^ (part >>> 16), 0x01000193);
  }
  return h >>> 0;
}

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
