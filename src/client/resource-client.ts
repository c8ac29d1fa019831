import type { Transport } from './transport.js';

/** A page of a list: `count` is the exact number of matches; `next`/`previous` are null at the ends. */
export interface Page<TRecord> {
  count: number;
  next: string | null;
  previous: string | null;
  items: TRecord[];
}

type QueryValue = string | number | undefined;

/** `list`, `retrieve` and `listAll` on one collection, e.g. `/api/methods/`. */
export class ResourceClient<TRecord, TParams extends { [K in keyof TParams]?: QueryValue }> {
  readonly #transport: Transport;
  readonly #collectionPath: string;

  constructor(transport: Transport, path: string) {
    this.#transport = transport;
    this.#collectionPath = `/api/${path}/`;
  }

  /** One page (10 records); `params.page` picks which, from 1. */
  list(params: TParams = {} as TParams): Promise<Page<TRecord>> {
    return this.#transport.getJson<Page<TRecord>>(this.#collectionPath + queryString(params));
  }

  /** One record by UID; a missing one (or another organization's) throws a 404 `not_found`. */
  retrieve(uid: string): Promise<TRecord> {
    return this.#transport.getJson<TRecord>(`${this.#collectionPath}${encodeURIComponent(uid)}/`);
  }

  /**
   * Every matching record, page after page, following each page's `next`
   * link until there is none. Starts at `params.page` (default 1).
   *
   * @example
   * for await (const method of client.paymentMethods.listAll({ entity: 'ent_1', currency: 'USD' })) {
   *   console.log(method.uid, method.type);
   * }
   */
  async *listAll(params: TParams = {} as TParams): AsyncGenerator<TRecord, void, undefined> {
    let path: string | undefined = this.#collectionPath + queryString(params);
    while (path !== undefined) {
      const page: Page<TRecord> = await this.#transport.getJson<Page<TRecord>>(path);
      yield* page.items;
      path = page.next === null ? undefined : this.#sameCollection(page.next);
    }
  }

  // The server builds `next` from its own idea of its address, which behind a
  // proxy may not be the base URL the client was given; only its query is
  // taken, so credentials only ever go to the configured base URL.
  #sameCollection(next: string): string {
    return this.#collectionPath + new URL(next).search;
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
