import { beforeAll, expect, it } from 'vitest';
import { ListCache } from '../../src/listing/list-cache.js';
import { listRecords } from '../../src/listing/list-records.js';
import { parseListQuery } from '../../src/listing/query-parser.js';
import { RESOURCES } from '../../src/resources/index.js';
import type { Queryable } from '../../src/store/store.js';
import { insertRecords, keyFieldOf, sampleRecords } from '../helpers/fixtures/index.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const [resource] = RESOURCES.filter((candidate) => !candidate.parent);
if (!resource) throw new Error('no top-level collection');
const STRIDE = 50;
const TOTAL = 1_120;
const CONCURRENT = 8;

/** The store, counting the statements whose text is one of `texts`. */
function countingStatements(db: Queryable, isCounted: (text: string) => boolean): { db: Queryable; count: () => number } {
  let counted = 0;
  return {
    db: {
      query: (text, params, options) => {
        if (isCounted(text)) counted += 1;
        return db.query(text, params, options);
      },
      exec: (text) => db.exec(text),
    },
    count: () => counted,
  };
}

describeEachStore('deep pages requested concurrently', (store) => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(store());
    await insertRecords(store(), resource, tenant.org.id, sampleRecords(resource, TOTAL, 11, `${resource.path}_walks`));
  });

  it('walk the index to the page start once, and every request gets the same page as an uncached one', async () => {
    const query = parseListQuery(resource, 'page=105');
    const uncached = await listRecords(store(), resource, tenant.org.id, query);
    const cache = new ListCache({ entries: 10, anchorStride: STRIDE, maxAnchors: 1_000 });
    // Past page 100 a cached list pages from anchors. Anchor walks are the only statements that step through the index by the stride (their last parameter).
    const walks = countingStatements(store(), (text) => /row_number\(\)/i.test(text));
    const answers = await Promise.all(Array.from({ length: CONCURRENT }, () => listRecords(walks.db, resource, tenant.org.id, query, cache)));

    expect(walks.count()).toBe(1);
    const key = keyFieldOf(resource);
    for (const answer of answers) {
      expect(answer.count).toBe(TOTAL);
      expect(answer.items.map((item) => item[key])).toEqual(uncached.items.map((item) => item[key]));
    }
  });
});
