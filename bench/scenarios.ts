import { creditLimitAt, paymentMethodAt, REFERENCE_TIME_MS, formatMicros, mulberry32, type DatasetSpec, type OrganizationShape } from './dataset.js';

/** The deepest page the deep-page scenario asks for (fewer when the organization is smaller). */
export const DEEP_PAGE = 50_000;

export interface Scenario {
  readonly id: string;
  readonly title: string;
  /** Which collection, by URL segment. */
  readonly path: 'methods' | 'limits';
  /**
   * The query string of the next request. Called once per request, so the
   * load is spread over many entities instead of one cached row.
   */
  nextQuery(): string;
}

export function scenarios(spec: DatasetSpec, largest: OrganizationShape): Scenario[] {
  const random = mulberry32(spec.seed ^ 0x5eed);
  const anyIndex = (n: number) => Math.floor(random() * n);
  const lastPage = Math.ceil(largest.paymentMethods / 10);
  const deepPage = Math.min(DEEP_PAGE, Math.max(1, Math.floor(lastPage * 0.9)));
  const dayAgo = formatMicros((REFERENCE_TIME_MS - 86_400_000) * 1000);
  return [
    {
      id: 'a',
      title: 'methods by entity + currency',
      path: 'methods',
      nextQuery: () => {
        const method = paymentMethodAt(spec, largest, anyIndex(largest.paymentMethods));
        return `entity=${method.entity}&currency=${method.currency}`;
      },
    },
    {
      id: 'b',
      title: 'limits by entity',
      path: 'limits',
      nextQuery: () => `entity=${creditLimitAt(spec, largest, anyIndex(largest.creditLimits)).entity}`,
    },
    { id: 'c', title: 'page 1 of the largest org (exact count)', path: 'methods', nextQuery: () => '' },
    { id: 'd', title: `page ${deepPage.toLocaleString('en-US')} of the largest org`, path: 'methods', nextQuery: () => `page=${deepPage}` },
    {
      id: 'e',
      title: 'updated_from a day ago, order_by=updated_at',
      path: 'methods',
      nextQuery: () => `updated_from=${dayAgo}&order_by=updated_at`,
    },
    { id: 'f', title: 'limits order_by=-balance', path: 'limits', nextQuery: () => 'order_by=-balance' },
  ];
}
