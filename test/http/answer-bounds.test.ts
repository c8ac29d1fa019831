import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { MAX_DETAIL_LENGTH, MAX_DOCS_PAGE_LENGTH, MAX_PUBLIC_URL_LENGTH } from '../../src/domain/answer-bounds.js';
import { MAX_UID_LENGTH } from '../../src/domain/record-uid.js';
import { encodeCursor, MAX_CURSOR_LENGTH } from '../../src/listing/cursor.js';
import { MAX_COLLECTION_PATH_LENGTH, MAX_LINK_HEADER_LENGTH, MAX_LINK_LENGTH } from '../../src/listing/page-links.js';
import { collectionPathOf } from '../../src/listing/resource-definition.js';
import { RESOURCES } from '../../src/resources/index.js';
import openapi from '../../openapi.json' with { type: 'json' };
import { json, useApp, type Page } from '../helpers/app.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

interface Problem {
  detail: string;
  errors?: { param: string; detail: string }[];
}

const LONGEST_PUBLIC_URL = `https://api.lender.example/${'p'.repeat(MAX_PUBLIC_URL_LENGTH - 'https://api.lender.example/'.length)}`;
// The longest timestamps a filter accepts (35 characters), their `+` sent encoded.
const LONGEST_TIME = { from: encodeURIComponent('2000-01-01T10:00:00.123456789+05:30'), to: encodeURIComponent('2099-12-31T10:00:00.123456789+05:30') };
// Characters form encoding expands most: each one sent raw comes back as `%27`, `%21`, `%28`.
const EXPANDING = (length: number) => "'!(".repeat(Math.ceil(length / 3)).slice(0, length);
const linksOf = (header: string) => [...header.matchAll(/<([^>]*)>/g)].map((match) => match[1]!);

describe('the declared bounds', () => {
  it('are the ones the service enforces', () => {
    const schemas = openapi.components.schemas;
    expect(schemas.PaymentMethodPage.properties.next.maxLength).toBe(MAX_LINK_LENGTH);
    expect(openapi.components.headers.Link.schema.maxLength).toBe(MAX_LINK_HEADER_LENGTH);
    expect(schemas.Problem.properties.detail.maxLength).toBe(MAX_DETAIL_LENGTH);
    expect(schemas.ParamError.properties.detail.maxLength).toBe(MAX_DETAIL_LENGTH);
    expect(openapi.paths['/docs'].get.responses['200'].content['text/html'].schema.maxLength).toBe(MAX_DOCS_PAGE_LENGTH);
  });

  it('PUBLIC_URL: the longest accepted, one character more refused naming it', () => {
    expect(loadConfig({ PUBLIC_URL: LONGEST_PUBLIC_URL }).publicUrl).toBe(LONGEST_PUBLIC_URL);
    expect(() => loadConfig({ PUBLIC_URL: `${LONGEST_PUBLIC_URL}p` })).toThrow(ConfigError);
    expect(() => loadConfig({ PUBLIC_URL: `${LONGEST_PUBLIC_URL}p` })).toThrow(/^PUBLIC_URL must be at most 1024 characters/);
    // Measured as the URL it becomes: a space is three characters.
    expect(() => loadConfig({ PUBLIC_URL: `${LONGEST_PUBLIC_URL.slice(0, -2)} p` })).toThrow(/^PUBLIC_URL must be at most/);
  });

  it("a link's parts: every collection's path with the longest parent uid, percent-encoded, and the service's longest cursor", () => {
    const widestUid = '\u0800'.repeat(MAX_UID_LENGTH);
    for (const resource of RESOURCES) expect(`/api/${collectionPathOf(resource, encodeURIComponent(widestUid))}/`.length).toBeLessThanOrEqual(MAX_COLLECTION_PATH_LENGTH);
    // A sort key of the longest field (a uid), of characters JSON escapes six bytes wide.
    const cursor = encodeCursor(
      { direction: 'before', inclusive: true, sortKey: '\u0001'.repeat(MAX_UID_LENGTH), rowId: '9223372036854775807' },
      { orgId: 'org_'.padEnd(MAX_UID_LENGTH, 'x'), collection: 'limits/x/entries', filters: ['entity=x'], ordering: '-updated_at' },
      randomBytes(32),
    );
    expect(cursor.length).toBeLessThanOrEqual(MAX_CURSOR_LENGTH);
  });
});

describeEachStore('answers within the declared bounds, for the longest input accepted', (store) => {
  const app = useApp(store, { publicUrl: LONGEST_PUBLIC_URL });
  let tenant: Tenant;
  const longLimit = `cl_${'x'.repeat(MAX_UID_LENGTH - 3)}`;
  beforeAll(async () => {
    tenant = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, Array.from({ length: 25 }, (_, i) => paymentMethod({ uid: `pm_bound_${i}` })));
    await insertCreditLimits(store(), tenant.org.id, [creditLimit({ uid: longLimit })]);
  });
  const get = (url: string) => app().inject({ url, headers: { authorization: tenant.authorization } });
  const timeFilters = (names: string[]) => names.map((name) => `${name}=${name.endsWith('_from') ? LONGEST_TIME.from : LONGEST_TIME.to}`).join('&');

  it('page links and Link: PUBLIC_URL at its longest, every filter at its longest, characters that expand', async () => {
    const answers = [
      await get(`/api/methods/?${timeFilters(['created_from', 'created_to', 'updated_from', 'updated_to'])}&entity=ent_1&currency=usd&order_by=-updated_at&page=2`),
      await get(`/api/methods/?cursor=&${timeFilters(['created_from', 'created_to', 'updated_from', 'updated_to'])}&entity=ent_1&order_by=-updated_at`),
      await get(`/api/loans/?${timeFilters(['created_from', 'created_to', 'updated_from', 'updated_to'])}&entity=${EXPANDING(255)}&credit_limit=${EXPANDING(255)}&cursor=`),
      await get(`/api/limits/${longLimit}/entries/?${timeFilters(['created_from', 'created_to', 'at_from', 'at_to'])}&order_by=-at`),
    ];
    expect(answers.map((answer) => answer.statusCode), answers.map((answer) => answer.body.slice(0, 300)).join('\n')).toEqual([200, 200, 200, 200]);
    expect(json<Page>(answers[1]!).next).toContain('cursor=');
    for (const answer of answers) {
      const page = json<Page>(answer);
      const header = String(answer.headers.link);
      expect(header.length).toBeLessThanOrEqual(MAX_LINK_HEADER_LENGTH);
      for (const link of [page.next, page.previous, ...linksOf(header)]) if (link !== null) expect(link.length).toBeLessThanOrEqual(MAX_LINK_LENGTH);
      expect(linksOf(header).every((link) => link.startsWith(LONGEST_PUBLIC_URL))).toBe(true);
    }
    expect(String(answers[2]!.headers.link)).toContain('%27%21%28');
  });

  it("a problem's detail, however long the input it quotes, ends within the bound", async () => {
    const unknownPath = await get(`/api/${'n'.repeat(16_000)}/`);
    expect(unknownPath.statusCode).toBe(404);
    const detail = json<Problem>(unknownPath).detail;
    expect([...detail]).toHaveLength(MAX_DETAIL_LENGTH);
    expect(detail).toMatch(/^no route for GET \/api\/nnn.*…$/);

    const badValue = await get(`/api/methods/?order_by=${'z'.repeat(16_000)}`);
    expect(badValue.statusCode).toBe(422);
    const problem = json<Problem>(badValue);
    for (const text of [problem.detail, ...(problem.errors ?? []).map((error) => error.detail)]) expect([...text].length).toBeLessThanOrEqual(MAX_DETAIL_LENGTH);

    // A short detail is untouched.
    expect(json<Problem>(await get('/api/nothing/')).detail).toBe('no route for GET /api/nothing/');
  });

  it('the reference page', async () => {
    const page = await app().inject({ url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.body.length).toBeLessThanOrEqual(MAX_DOCS_PAGE_LENGTH);
  });
});
