import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildCursorLinks, buildPageLinks } from '../../src/listing/page-links.js';

/** The model: the request's parameters in its order, `name` removed, then set to `value` (URLSearchParams `set`). */
function modelLink(collectionUrl: string, params: ReadonlyArray<readonly [string, string]>, name: string, value: string): string {
  const search = new URLSearchParams(params.filter(([param]) => param !== name) as [string, string][]);
  search.set(name, value);
  return `${collectionUrl}?${search.toString()}`;
}

const URL_BASE = 'https://api.example.test/api/payment-methods/';
// Names the list takes, and anything a client might type (spaces, '&', '=', non-ASCII, empty).
const name = fc.oneof(fc.constantFrom('page', 'cursor', 'entity_uid', 'currency', 'order_by'), fc.string());
const value = fc.oneof(fc.constantFrom('', 'a b', 'x&y=z', '€', '*-._~', '+/='), fc.string(), fc.integer().map(String));
const params = fc.array(fc.tuple(name, value), { maxLength: 6 });

describe('page links', () => {
  it('keep every other parameter in the client order, encoded, with page set last', () => {
    fc.assert(
      fc.property(params, fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 50 }), (given, page, lastPage) => {
        const links = buildPageLinks(URL_BASE, given, page, lastPage);
        const expected = {
          next: page < lastPage ? modelLink(URL_BASE, given, 'page', String(page + 1)) : null,
          previous: page > 1 ? modelLink(URL_BASE, given, 'page', String(page - 1)) : null,
          first: modelLink(URL_BASE, given, 'page', '1'),
        };
        expect(links).toMatchObject(expected);
        const header = [
          expected.next && `<${expected.next}>; rel="next"`,
          expected.previous && `<${expected.previous}>; rel="prev"`,
          `<${expected.first}>; rel="first"`,
        ].filter(Boolean);
        expect(links.header).toBe(header.join(', '));
      }),
    );
  });

  it('carry any cursor value encoded as a form would encode it', () => {
    const cursor = fc.oneof(fc.constant(null), value);
    fc.assert(
      fc.property(params, cursor, cursor, (given, next, previous) => {
        const links = buildCursorLinks(URL_BASE, given, { next, previous });
        expect(links.next).toBe(next === null ? null : modelLink(URL_BASE, given, 'cursor', next));
        expect(links.previous).toBe(previous === null ? null : modelLink(URL_BASE, given, 'cursor', previous));
        expect(links.first).toBe(modelLink(URL_BASE, given, 'cursor', ''));
      }),
    );
  });
});
