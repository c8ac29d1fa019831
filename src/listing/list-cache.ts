/**
 * What the list engine remembers about a list between requests: its exact
 * count and where deep pages start, each tagged with the version of the
 * organization's table it was computed at (`row_counts.version`, moved by
 * every write that can change which rows a list holds or their order). A
 * request reuses them only after reading the same version in the same
 * statement as its page, so what it answers is exact for its own snapshot;
 * an entry seen at another version is dropped.
 *
 * Bounded: the least recently used lists are forgotten first.
 *
 * @example
 * const cache = new ListCache({ entries: 10_000, anchorStride: 5_000 });
 * const list = cache.list('payment_methods|1|entity=ent_1');
 */
export interface ListCacheOptions {
  /** How many lists (table, organization, filters) to remember. */
  readonly entries: number;
  /** Rows between two remembered page starts: a deep page skips at most this many index entries. */
  readonly anchorStride: number;
  /**
   * How many page anchors to remember in all (about 150 bytes each): past it
   * the least recently used lists are forgotten, so memory stays bounded
   * however deep and however many lists clients page through.
   */
  readonly maxAnchors: number;
}

/** Where a page starts: the sort key and id of the row just before it. */
export interface PageAnchor {
  /** Rows before the page start (a multiple of the stride). */
  readonly offset: number;
  /** The ordering field's value as text (exact: timestamps to the microsecond, decimals as written). */
  readonly sortKey: string;
  readonly rowId: string;
}

export const DEFAULT_LIST_CACHE: ListCacheOptions = { entries: 10_000, anchorStride: 1_000, maxAnchors: 200_000 };

export class CachedList {
  count: number | undefined;
  /** Anchor walks in progress, by ordering and offset. */
  private readonly walks = new Map<string, Promise<PageAnchor | undefined>>();
  private readonly anchors = new Map<string, Map<number, PageAnchor>>();
  private anchorTotal = 0;

  constructor(
    readonly version: string,
    private readonly onAnchorsAdded: (list: CachedList, added: number) => void = () => {},
  ) {}

  get anchorCount(): number {
    return this.anchorTotal;
  }

  /** The anchor remembered exactly at `offset` rows, if any. */
  anchorAt(ordering: string, offset: number): PageAnchor | undefined {
    return this.anchors.get(ordering)?.get(offset);
  }

  /** The remembered anchor nearest below `offset` (at most `offset`), if any. */
  nearestAnchor(ordering: string, offset: number): PageAnchor | undefined {
    let best: PageAnchor | undefined;
    for (const anchor of this.anchors.get(ordering)?.values() ?? []) {
      if (anchor.offset <= offset && (!best || anchor.offset > best.offset)) best = anchor;
    }
    return best;
  }

  /** Runs `walk` unless a walk under the same key is in progress: then its result is shared. */
  shareWalk(key: string, walk: () => Promise<PageAnchor | undefined>): Promise<PageAnchor | undefined> {
    let walking = this.walks.get(key);
    if (!walking) {
      walking = walk().finally(() => this.walks.delete(key));
      this.walks.set(key, walking);
    }
    return walking;
  }

  addAnchors(ordering: string, anchors: readonly PageAnchor[]): void {
    let byOffset = this.anchors.get(ordering);
    if (!byOffset) {
      byOffset = new Map();
      this.anchors.set(ordering, byOffset);
    }
    const before = byOffset.size;
    for (const anchor of anchors) byOffset.set(anchor.offset, anchor);
    const added = byOffset.size - before;
    this.anchorTotal += added;
    if (added > 0) this.onAnchorsAdded(this, added);
  }
}

export class ListCache {
  /** In least recently used order: a list used again is moved to the end. */
  private readonly lists = new Map<string, CachedList>();
  private anchorTotal = 0;
  // Deleting from the front of a Map leaves holes that a fresh keys()
  // iterator walks again on every call (measured: about a tenth of a busy
  // service's CPU once the cache was full). One iterator is kept and
  // advanced instead: every live list is ahead of it, since the lists it
  // passed were forgotten, and a list used again is moved past it.
  private oldestFirst: Iterator<string> | undefined;

  constructor(readonly options: ListCacheOptions = DEFAULT_LIST_CACHE) {}

  /** The list remembered under `key` at `version`, or a fresh one that replaces it. */
  at(key: string, version: string): CachedList {
    const known = this.lists.get(key);
    if (known && known.version === version) {
      this.touch(key, known);
      return known;
    }
    const fresh = new CachedList(version, (list, added) => this.anchorsAdded(key, list, added));
    this.touch(key, fresh);
    return fresh;
  }

  /** The list remembered under `key`, whatever its version. */
  peek(key: string): CachedList | undefined {
    return this.lists.get(key);
  }

  forget(key: string): void {
    const list = this.lists.get(key);
    if (!list) return;
    this.lists.delete(key);
    this.anchorTotal -= list.anchorCount;
  }

  get size(): number {
    return this.lists.size;
  }

  /** Anchors remembered in all (lists replaced or forgotten no longer count). */
  get anchorCount(): number {
    return this.anchorTotal;
  }

  private touch(key: string, list: CachedList): void {
    this.forget(key);
    this.lists.set(key, list);
    this.anchorTotal += list.anchorCount;
    while (this.lists.size > this.options.entries) this.forgetOldest();
  }

  private anchorsAdded(key: string, list: CachedList, added: number): void {
    // A list already replaced or forgotten holds its anchors only until its request ends.
    if (this.lists.get(key) !== list) return;
    this.anchorTotal += added;
    while (this.anchorTotal > this.options.maxAnchors && this.lists.size > 0) this.forgetOldest();
  }

  private forgetOldest(): void {
    let next = this.oldestFirst?.next();
    if (!next || next.done) {
      this.oldestFirst = this.lists.keys();
      next = this.oldestFirst.next();
    }
    if (!next.done) this.forget(next.value);
  }
}
