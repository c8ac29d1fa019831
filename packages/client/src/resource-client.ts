import { LendingApiError } from './lending-api-error.js';
import { Transport, type ClientOptions, type RequestOptions } from './transport.js';

/** A page of a list: `count` is the exact number of matches; `next`/`previous` are null at the ends. */
export interface Page<TRecord> {
  count: number;
  next: string | null;
  previous: string | null;
  items: TRecord[];
}

export type QueryValue = string | number | undefined;

/** What a `ResourceClient` talks through: client options, or the transport a `LendingClient` shares. */
export type Connection = ClientOptions | Transport;

/** `listAll` walks with cursors; it chooses the pages itself. */
export type ListAllParams<TParams> = Omit<TParams, 'page' | 'cursor'>;

/** Per-call options of an iterator (`listAll`). */
export interface ListAllOptions extends RequestOptions {
  /**
   * A 429 the client's own retries gave up on (its Retry-After longer than
   * `retry.maxDelayMs`, or too many in a row) is waited out, as long as its
   * Retry-After says, while the waits for one page add up to at most this
   * many milliseconds; then the 429 is thrown. Default 120 000 (two windows
   * of the per-minute budget); 0 throws the first one.
   */
  readonly maxRateLimitWaitMs?: number | undefined;
}

const DEFAULT_MAX_RATE_LIMIT_WAIT_MS = 120_000;
/** A 429 without Retry-After (a proxy's): wait this long before asking again. */
const RATE_LIMIT_WAIT_WITHOUT_RETRY_AFTER_MS = 1_000;

/**
 * `list` and `listAll` on one collection path, e.g. `/api/limits/cl_1/entries/`:
 * what a collection nested under one record (`client.creditLimits.entries(uid)`)
 * offers, and the base of `ResourceClient`.
 */
export class ListClient<TRecord = Record<string, unknown>, TParams extends { [K in keyof TParams]?: QueryValue } = Record<string, QueryValue>> {
  protected readonly transport: Transport;
  protected readonly collectionPath: string;

  /**
   * `segments` is the path under `/api/`: `['methods']`, or for a nested
   * collection `['limits', uid, 'entries']` (each segment is URL-encoded).
   */
  constructor(connection: Connection, segments: readonly string[]) {
    if (segments.length === 0 || segments.some((segment) => segment === '')) throw new TypeError('a collection path needs non-empty segments');
    this.transport = connection instanceof Transport ? connection : new Transport(connection);
    this.collectionPath = `/api/${segments.map((segment) => encodeURIComponent(segment)).join('/')}/`;
  }

  /** One page (10 records); `params.page` picks which, from 1. */
  list(params: TParams = {} as TParams, options: RequestOptions = {}): Promise<Page<TRecord>> {
    return this.transport.getJson<Page<TRecord>>(this.collectionPath + queryString(params), options);
  }

  /**
   * Every matching record, once each, with cursor pages: the first request
   * sends the filters with an empty `cursor=` (a walk from the first row), then
   * each page's `next` link is followed until it is null (the last page). Unlike page
   * numbers, a cursor continues after the last row returned, so records
   * changing during the walk do not shift later pages; sync with
   * `order_by: 'updated_at'` to also see every record changed meanwhile.
   * A long walk that meets the rate limit waits it out (`maxRateLimitWaitMs`).
   *
   * @example
   * for await (const method of client.paymentMethods.listAll({ entity: 'ent_1', currency: 'USD' })) {
   *   console.log(method.uid, method.type);
   * }
   */
  async *listAll(params: ListAllParams<TParams> = {} as ListAllParams<TParams>, options: ListAllOptions = {}): AsyncGenerator<TRecord, void, undefined> {
    // A page or cursor from an untyped caller would make the first request a 422.
    const { page: _page, cursor: _cursor, ...filters } = params as { [name: string]: QueryValue };
    let path: string | undefined = this.collectionPath + queryString(this.walkStart(filters));
    while (path !== undefined) {
      const page: Page<TRecord> = await this.#pageWaitingOutRateLimit(path, options);
      for (const item of page.items) {
        options.signal?.throwIfAborted();
        yield item;
      }
      path = page.next === null ? undefined : this.#sameCollection(page.next);
    }
  }

  /** One page of a walk; a 429 is waited out while the waits for it stay within `maxRateLimitWaitMs`. */
  async #pageWaitingOutRateLimit(path: string, options: ListAllOptions): Promise<Page<TRecord>> {
    const bound = options.maxRateLimitWaitMs ?? DEFAULT_MAX_RATE_LIMIT_WAIT_MS;
    let waited = 0;
    for (;;) {
      try {
        return await this.transport.getJson<Page<TRecord>>(path, options);
      } catch (error) {
        if (!(error instanceof LendingApiError) || error.status !== 429) throw error;
        const wait = error.retryAfterSeconds === undefined ? RATE_LIMIT_WAIT_WITHOUT_RETRY_AFTER_MS : error.retryAfterSeconds * 1000;
        if (waited + wait > bound) throw error;
        waited += wait;
        await this.transport.wait(wait, options.signal);
      }
    }
  }

  /** The query of `listAll`'s first request: the filters and an empty `cursor=`, which starts a keyset walk. */
  protected walkStart(filters: { [name: string]: QueryValue }): { [name: string]: QueryValue } {
    return { ...filters, cursor: '' };
  }

  // The server builds `next` from its own idea of its address, which behind a
  // proxy may not be the base URL the client was given; only its query is
  // taken, so credentials only ever go to the configured base URL.
  #sameCollection(next: string): string {
    return this.collectionPath + new URL(next).search;
  }
}

/**
 * `list`, `retrieve` and `listAll` on one collection, e.g. `/api/methods/`.
 * `LendingClient` has one per collection; on its own it reaches any
 * collection by its path segment:
 *
 * @example
 * const entities = new ResourceClient<{ uid: string; name: string }>({ baseUrl, organizationId, apiKey }, 'entities');
 * const first = await entities.list({ order_by: 'name' });
 */
export class ResourceClient<TRecord = Record<string, unknown>, TParams extends { [K in keyof TParams]?: QueryValue } = Record<string, QueryValue>> extends ListClient<
  TRecord,
  TParams
> {
  /** `collection` is the path segment under `/api/`: `'methods'`, `'limits'`, `'entities'`. */
  constructor(connection: Connection, collection: string) {
    if (!/^[A-Za-z0-9_-]+$/.test(collection)) throw new TypeError(`collection must be one path segment such as 'methods', got '${collection}'`);
    super(connection, [collection]);
  }

  /** One record by UID; a missing one (or another organization's) throws a 404 `not_found`. */
  retrieve(uid: string, options: RequestOptions = {}): Promise<TRecord> {
    return this.transport.getJson<TRecord>(`${this.collectionPath}${encodeURIComponent(uid)}/`, options);
  }
}

function queryString(params: { [name: string]: QueryValue }): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) search.set(name, String(value));
  }
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
