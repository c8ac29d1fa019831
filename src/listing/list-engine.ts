import { ApiError } from '../domain/errors.js';
import { truncate } from '../domain/truncate.js';
import type { Queryable } from '../store/store.js';
import { CursorSecret } from './cursor-secret.js';
import type { ListCache } from './list-cache.js';
import { listCursorPage } from './list-cursor-page.js';
import { listRecords, retrieveRecord } from './list-records.js';
import { buildCursorLinks, buildPageLinks } from './page-links.js';
import { scopeToParent } from './parent-scope.js';
import { parseListQuery } from './query-parser.js';
import { collectionPathOf, type ResourceDefinition } from './resource-definition.js';
import type { ApiRecord } from './record-rendering.js';

/** One list request as it arrived: which collection, whose, and the query string as sent. */
export interface ListRequest {
  readonly resource: ResourceDefinition;
  readonly orgId: string;
  /** The query string without its `?`, undecoded. */
  readonly rawQuery: string;
  /** Where the service is reached from outside (`https://host`), the base of the page links. */
  readonly baseUrl: string;
  /** A nested collection's parent record, by uid (`/api/limits/{uid}/entries/`). */
  readonly parentUid?: string | undefined;
}

/** A list answer's body: the exact count, links to the neighbouring pages, and the records. */
export interface PageEnvelope {
  readonly count: number;
  readonly next: string | null;
  readonly previous: string | null;
  readonly items: ApiRecord[];
}

/** What the engine sets on the answer (a Fastify reply is one). */
export interface LinkHeaderTarget {
  header(name: 'link', value: string): unknown;
}

export type { ListCache };

/**
 * The list engine's one entry point: answers a list request — the query
 * validated, scoped to a parent when nested, served as a numbered page or,
 * with `cursor=`, as a keyset page, with its Link header — and a record's
 * retrieval. The HTTP layer only says which collection was asked for.
 */
export class ListEngine {
  readonly #cursorSecret = new CursorSecret();
  readonly #listCache: ListCache | undefined;

  constructor(options: { listCache?: ListCache | undefined } = {}) {
    this.#listCache = options.listCache;
  }

  async answerList(db: Queryable, request: ListRequest, reply: LinkHeaderTarget): Promise<PageEnvelope> {
    const { resource, orgId, parentUid } = request;
    const parsed = parseListQuery(resource, request.rawQuery);
    const query = parentUid === undefined ? parsed : await scopeToParent(db, resource, orgId, parentUid, parsed);
    const collectionUrl = `${request.baseUrl}/api/${parentUid === undefined ? collectionPathOf(resource) : collectionPathOf(resource, encodeURIComponent(parentUid))}/`;
    if (query.cursor !== undefined) {
      const page = await listCursorPage(db, resource, orgId, query, this.#cursorSecret);
      const links = buildCursorLinks(collectionUrl, query.params, page);
      reply.header('link', links.header);
      return { count: page.count, next: links.next, previous: links.previous, items: page.items };
    }
    const result = await listRecords(db, resource, orgId, query, this.#listCache);
    const links = buildPageLinks(collectionUrl, query.params, query.page, result.lastPage);
    reply.header('link', links.header);
    return { count: result.count, next: links.next, previous: links.previous, items: result.items };
  }

  /** One record by uid; a query string is refused as a list refuses an unknown parameter, not silently ignored. */
  retrieve(db: Queryable, resource: ResourceDefinition, orgId: string, uid: string, rawQuery: string): Promise<ApiRecord> {
    refuseQueryParameters(rawQuery);
    return retrieveRecord(db, resource, orgId, uid);
  }
}

function refuseQueryParameters(rawQuery: string): void {
  if (rawQuery === '') return;
  const names = [...new Set(new URLSearchParams(rawQuery).keys())];
  if (names.length === 0) return;
  throw ApiError.invalidParameters(names.map((param) => ({ param, detail: `'${truncate(param)}' is not a parameter: a single record's URL takes none` })));
}
