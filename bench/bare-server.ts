/**
 * The floor `npm run bench` compares the service with: a bare Fastify server
 * whose handler runs the same list-engine call the service makes (parse the
 * query, `listRecords` with its own list cache: the same SQL, prepared the
 * same way, on a PostgresStore pool of the same size), for one organization
 * given by id, and returns the page as JSON. No authentication, hooks, access
 * log, metrics, security headers or links.
 *
 *   DATABASE_URL=postgres://… BARE_ORG_ID=… node --import tsx bench/bare-server.ts
 *
 * Prints `{"url": …}` once listening; exits on SIGTERM.
 */
import Fastify from 'fastify';
import { DEFAULT_LIST_CACHE, ListCache } from '../src/listing/list-cache.js';
import { listRecords } from '../src/listing/list-records.js';
import { parseListQuery } from '../src/listing/query-parser.js';
import { RESOURCES } from '../src/resources/index.js';
import { PostgresStore } from '../src/store/postgres-store.js';

const databaseUrl = process.env.DATABASE_URL;
const orgId = process.env.BARE_ORG_ID;
if (!databaseUrl || !orgId) throw new Error('set DATABASE_URL and BARE_ORG_ID');

const store = new PostgresStore(databaseUrl, { poolSize: Number(process.env.DATABASE_POOL_SIZE ?? 10) });
const cache = new ListCache(DEFAULT_LIST_CACHE);
const app = Fastify({ logger: false });
// Top-level collections only: a nested one is listed under a parent record (see resource-routes.ts).
for (const resource of RESOURCES.filter((candidate) => !candidate.parent)) {
  app.get(`/api/${resource.path}/`, async (request) => {
    const url = request.raw.url ?? '';
    const start = url.indexOf('?');
    const query = parseListQuery(resource, start === -1 ? '' : url.slice(start + 1));
    const result = await listRecords(store, resource, orgId, query, cache);
    return { count: result.count, items: result.items };
  });
}
const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ url })}\n`);
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => store.close())
    .finally(() => process.exit(0));
});
