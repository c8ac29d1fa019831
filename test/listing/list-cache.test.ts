import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ListCache, type PageAnchor } from '../../src/listing/list-cache.js';

function anchors(from: number, count: number): PageAnchor[] {
  return Array.from({ length: count }, (_, i) => ({ offset: (from + i + 1) * 10, sortKey: String(i), rowId: String(i) }));
}

describe('ListCache', () => {
  it('keeps a list only at its version: another version starts afresh', () => {
    const cache = new ListCache({ entries: 10, anchorStride: 10, maxAnchors: 100 });
    const list = cache.at('k', '7');
    list.count = 42;
    list.addAnchors('-created_at', anchors(0, 3));

    expect(cache.at('k', '7').count).toBe(42);
    const newer = cache.at('k', '8');
    expect(newer.count).toBeUndefined();
    expect(newer.nearestAnchor('-created_at', 30)).toBeUndefined();
    expect(cache.anchorCount).toBe(0);
  });

  it('finds the nearest anchor at or below an offset, per ordering', () => {
    const list = new ListCache({ entries: 10, anchorStride: 10, maxAnchors: 100 }).at('k', '1');
    list.addAnchors('created_at', anchors(0, 5)); // offsets 10 … 50
    expect(list.nearestAnchor('created_at', 35)?.offset).toBe(30);
    expect(list.nearestAnchor('created_at', 50)?.offset).toBe(50);
    expect(list.nearestAnchor('created_at', 9)).toBeUndefined();
    expect(list.nearestAnchor('-created_at', 35)).toBeUndefined();
  });

  it('forgets the least recently used list past its entry bound', () => {
    const cache = new ListCache({ entries: 2, anchorStride: 10, maxAnchors: 100 });
    cache.at('a', '1').count = 1;
    cache.at('b', '1').count = 2;
    cache.at('a', '1'); // a is now the most recent
    cache.at('c', '1').count = 3;
    expect(cache.peek('a')?.count).toBe(1);
    expect(cache.peek('b')).toBeUndefined();
    expect(cache.size).toBe(2);
  });

  it('bounds the anchors of all lists together, forgetting the least recently used lists', () => {
    const cache = new ListCache({ entries: 100, anchorStride: 10, maxAnchors: 10 });
    cache.at('a', '1').addAnchors('created_at', anchors(0, 6));
    cache.at('b', '1').addAnchors('created_at', anchors(0, 3));
    expect(cache.anchorCount).toBe(9);

    cache.at('c', '1').addAnchors('created_at', anchors(0, 4));

    expect(cache.peek('a')).toBeUndefined();
    expect(cache.anchorCount).toBe(7);
    expect(cache.peek('c')?.nearestAnchor('created_at', 40)?.offset).toBe(40);
  });
});

describe('ListCache eviction', () => {
  // Regression: eviction walks one long-lived iterator instead of a fresh
  // keys() per eviction; it must still forget exactly the least recently used.
  it('keeps exactly the most recently used lists through any sequence of uses', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 300 }), (entries, uses) => {
        const cache = new ListCache({ entries, anchorStride: 10, maxAnchors: 1000 });
        const model: string[] = [];
        for (const use of uses) {
          const key = `k${use}`;
          cache.at(key, '1');
          const used = model.indexOf(key);
          if (used !== -1) model.splice(used, 1);
          model.push(key);
          if (model.length > entries) model.shift();
        }
        expect(cache.size).toBe(model.length);
        for (const key of model) expect(cache.peek(key)).toBeDefined();
      }),
    );
  });
});
