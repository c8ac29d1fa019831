import { RESOURCES } from '../resources/index.js';

/**
 * The demo organization's sample data, as import lines (the JSON Lines
 * format of `lending-api import`). Deterministic, so every demo looks alike.
 */
export const DEMO_ORG_UID = 'org_demo';
export const DEMO_ORG_NAME = 'Demo Lender';

/**
 * One import line: its `object` (any importable collection's, or a ledger
 * kind) and its fields. The import validates it by the collection's
 * definition, so a new collection's demo lines need no change here.
 */
export interface DemoLine {
  readonly object: string;
  readonly [field: string]: string;
}

const TYPES_BY_CURRENCY: Record<string, string[]> = {
  USD: ['ACH', 'WIRE', 'CARD'],
  EUR: ['SEPA', 'WIRE', 'CARD'],
  GBP: ['BACS', 'WIRE', 'CARD'],
};
const CURRENCIES = Object.keys(TYPES_BY_CURRENCY);
const ENTITIES = 12;
const ENTITY_NAMES = ['Acme', 'Borealis', 'Cobalt', 'Dune', 'Ember', 'Fjord', 'Granite', 'Harbor', 'Iris', 'Juniper', 'Kestrel', 'Lumen'];
const ENTITY_COUNTRIES = ['US', 'GB', 'DE', 'FR', 'NL', 'IE'];

export function demoLines(): DemoLine[] {
  const lines: DemoLine[] = [];
  const loans: DemoLine[] = [];
  const base = Date.UTC(2025, 0, 6, 9, 0, 0);
  let n = 0;
  for (let e = 1; e <= ENTITIES; e += 1) {
    const entity = `ent_demo_${String(e).padStart(2, '0')}`;
    const registered = timestamp(base + e * 41_000_000, e * 4_241);
    lines.push({
      object: 'entity',
      uid: entity,
      name: `${ENTITY_NAMES[(e - 1) % ENTITY_NAMES.length] ?? 'Demo'} ${e % 2 === 0 ? 'Ltd' : 'Trading'}`,
      country: ENTITY_COUNTRIES[e % ENTITY_COUNTRIES.length] ?? 'US',
      created_at: registered,
      updated_at: registered,
    });
    const currencies = CURRENCIES.slice(0, 1 + (e % 3));
    for (const currency of currencies) {
      const types = TYPES_BY_CURRENCY[currency] ?? [];
      for (let t = 0; t < 1 + (e % 2); t += 1) {
        n += 1;
        const created = timestamp(base + n * 37_913_000, n * 7919);
        lines.push({
          object: 'payment_method',
          uid: `pm_demo_${String(n).padStart(3, '0')}`,
          entity,
          type: types[(e + t) % types.length] ?? 'WIRE',
          currency,
          account_number: String(100_000_000 + n * 7_654_321).padStart(12, '0'),
          created_at: created,
          // Never before created_at (the import refuses that).
          updated_at: n % 5 === 0 ? created : timestamp(base + n * 37_913_000 + 86_400_000 * (n % 5), n * 104_729),
        });
      }
      const limitUid = `cl_demo_${String(e).padStart(2, '0')}_${currency.toLowerCase()}`;
      const capacity = 10_000 * (1 + ((e * 7) % 10));
      lines.push({
        object: 'credit_limit',
        uid: limitUid,
        entity,
        currency,
        capacity: `${capacity}.00`,
        rate: (0.0002 + (e % 4) * 0.0001).toFixed(4),
        created_at: timestamp(base + e * 51_000_000, e * 31_337),
        updated_at: timestamp(base + e * 51_000_000, e * 31_337),
      });
      // A loan on every other limit, paid out to the entity's first method in its currency.
      const method = lines.find((line) => line.object === 'payment_method' && line.entity === entity && line.currency === currency);
      if (method && e % 2 === 1) {
        const principal = Math.round(capacity * 0.05);
        loans.push({
          object: 'loan',
          uid: `ln_demo_${String(loans.length + 1).padStart(2, '0')}`,
          credit_limit: limitUid,
          payment_method: method.uid ?? '',
          principal: `${principal}.00`,
          repaid: e % 3 === 0 ? `${principal}.00` : `${Math.round(principal / 5)}.00`,
          reference: `demo-loan-${e}-${currency.toLowerCase()}`,
          created_at: timestamp(base + 100 * 86_400_000 + e * 3_600_000, e * 13),
        });
      }
      if (e % 4 !== 0) {
        const drawn = Math.round(capacity * (0.1 + (e % 5) * 0.15));
        lines.push({ object: 'drawdown', id: `dd_${limitUid}`, limit: limitUid, amount: `${drawn}.00`, at: timestamp(base + 90 * 86_400_000 + e * 3_600_000, e) });
        if (e % 3 === 0) {
          lines.push({ object: 'repayment', id: `rp_${limitUid}`, limit: limitUid, amount: `${Math.round(drawn / 4)}.50`, at: timestamp(base + 120 * 86_400_000 + e * 3_600_000, e * 11) });
        }
      }
    }
  }
  // After every limit's own ledger lines: the loans draw on what they left. Then the lines a collection's
  // definition carries itself (ImportLineDefinition.demo).
  return [...lines, ...loans, ...definedDemoLines()];
}

function definedDemoLines(): DemoLine[] {
  return RESOURCES.flatMap(({ importLine }) => (importLine?.demo ?? []).map((record) => ({ ...record, object: importLine?.object ?? '' })));
}

/** An RFC 3339 time with microseconds, from milliseconds plus extra microseconds. */
function timestamp(ms: number, extraMicros: number): string {
  const iso = new Date(ms).toISOString();
  const micros = String((Number(iso.slice(20, 23)) * 1000 + (extraMicros % 1000)) % 1_000_000).padStart(6, '0');
  return `${iso.slice(0, 19)}.${micros}Z`;
}
