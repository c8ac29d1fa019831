/**
 * `node --import tsx bench/cursor-walk.ts [--rows 1000000] [--repeat 30]`:
 * what a keyset (cursor) page costs at the start of a 1,000,000-row list and
 * at its end, next to numbered pages at the same depths. One organization's
 * payment methods are generated in SQL into a throwaway schema of the
 * PostgreSQL at DATABASE_URL (default: the local server's `test` database),
 * dropped afterwards. Requests go through the real app (`inject`), so each
 * time includes parsing, the statement, signing the next cursor and the
 * JSON body; the list cache is off, so numbered pages are measured as an
 * uncached client meets them.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.js';
import { createApiKey } from '../src/auth/api-keys.js';
import { loadConfig } from '../src/config.js';
import { createOrganization } from '../src/organizations/organizations.js';
import { encodeCursor } from '../src/listing/cursor.js';
import { loadCursorSecret } from '../src/listing/cursor-secret.js';
import { migrate } from '../src/store/migrate.js';
import { nodeLedger } from '../src/node-ledger.js';
import { PostgresStore } from '../src/store/postgres-store.js';

const { values: args } = parseArgs({ options: { rows: { type: 'string', default: '1000000' }, repeat: { type: 'string', default: '30' } } });
const rows = Number(args.rows);
const repeat = Number(args.repeat);
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `cursor_bench_${randomBytes(4).toString('hex')}`;

const admin = new PostgresStore(url, { poolSize: 1 });
await admin.query(`CREATE SCHEMA ${schema}`);
const store = new PostgresStore(url, { poolSize: 4, searchPath: schema });
try {
  await migrate(store);
  const org = await createOrganization(store, 'Cursor bench', 'org_cursor_bench');
  const key = await createApiKey(store, org.uid);
  const loadStart = performance.now();
  // Ten rows share each created_at (ties are broken by id); updated_at is spread differently.
  await store.query(
    `INSERT INTO payment_methods (org_id, uid, entity, type, currency, last_2, created_at, updated_at)
     SELECT $1, 'pm_' || n, 'ent_' || (n % 200000), (ARRAY['ACH','SEPA','BACS','WIRE','CARD'])[1 + n % 5], 'USD', lpad((n % 100)::text, 2, '0'),
            timestamptz '2023-01-01' + (n / 10) * interval '1 second', timestamptz '2024-01-01' + ((n::bigint * 7919) % $2) * interval '1 millisecond'
       FROM generate_series(1, $2) AS n`,
    [org.id, rows],
  );
  await store.query('ANALYZE payment_methods');
  console.log(`loaded ${rows} rows in ${((performance.now() - loadStart) / 1000).toFixed(1)} s`);

  const app = await buildApp({ store, ledger: nodeLedger(store, loadConfig({})), listCache: false });
  const authorization = `Basic ${Buffer.from(`${org.uid}:${key.key}`).toString('base64')}`;
  const secret = await loadCursorSecret(store);
  const get = async (path: string) => {
    const start = performance.now();
    const response = await app.inject({ url: path, headers: { authorization } });
    const ms = performance.now() - start;
    if (response.statusCode !== 200) throw new Error(`${path}: ${response.statusCode} ${response.body.slice(0, 300)}`);
    return { ms, body: JSON.parse(response.body) as { count: number; next: string | null; items: { uid: string }[] } };
  };
  const median = async (path: string) => {
    const times: number[] = [];
    for (let i = 0; i < repeat; i += 1) times.push((await get(path)).ms);
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)]!;
  };

  const results: string[] = [];
  for (const orderBy of ['-created_at', 'updated_at']) {
    const descending = orderBy.startsWith('-');
    const column = orderBy.replace(/^-/, '');
    // The row 10 rows before the end of the ordering: a cursor after it is the last page.
    const [end] = await store.query<{ key: string; id: string }>(
      `SELECT to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS key, id::text AS id FROM payment_methods
        WHERE org_id = $1 ORDER BY ${column} ${descending ? 'ASC' : 'DESC'}, id ${descending ? 'ASC' : 'DESC'} LIMIT 1 OFFSET 10`,
      [org.id],
    );
    const lastCursor = encodeCursor(
      { direction: 'after', inclusive: false, sortKey: end!.key, rowId: end!.id },
      { orgId: org.id, collection: 'methods', filters: [], ordering: orderBy },
      secret,
    );
    const first = await get(`/api/methods/?order_by=${orderBy}&cursor=`);
    const last = await get(`/api/methods/?order_by=${orderBy}&cursor=${lastCursor}`);
    if (last.body.items.length !== 10 || last.body.next !== null || first.body.count !== rows) throw new Error('the last page is not the last page');
    const lastPage = Math.ceil(rows / 10);
    const timings = {
      cursorFirst: await median(`/api/methods/?order_by=${orderBy}&cursor=`),
      cursorSecond: await median(new URL(first.body.next!).pathname + new URL(first.body.next!).search),
      cursorLast: await median(`/api/methods/?order_by=${orderBy}&cursor=${lastCursor}`),
      pageFirst: await median(`/api/methods/?order_by=${orderBy}&page=1`),
      pageLast: await median(`/api/methods/?order_by=${orderBy}&page=${lastPage}`),
    };
    results.push(
      `order_by=${orderBy}: cursor first page ${timings.cursorFirst.toFixed(2)} ms, second ${timings.cursorSecond.toFixed(2)} ms, ` +
        `last (rows ${rows - 9}–${rows}) ${timings.cursorLast.toFixed(2)} ms; numbered page 1 ${timings.pageFirst.toFixed(2)} ms, ` +
        `page ${lastPage} ${timings.pageLast.toFixed(2)} ms (no list cache)`,
    );
  }
  // A walk: consecutive pages from the start, to show the per-page cost stays flat along the way.
  let link: string | null = '/api/methods/?order_by=updated_at&cursor=';
  const walkTimes: number[] = [];
  for (let page = 0; page < 300 && link; page += 1) {
    const { ms, body } = await get(link);
    walkTimes.push(ms);
    link = body.next && new URL(body.next).pathname + new URL(body.next).search;
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  results.push(`walk of 300 consecutive cursor pages (updated_at): median ${med(walkTimes).toFixed(2)} ms, pages 1–100 ${med(walkTimes.slice(0, 100)).toFixed(2)} ms, pages 201–300 ${med(walkTimes.slice(200)).toFixed(2)} ms`);
  const plan = await store.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT id FROM payment_methods WHERE org_id = $1 AND (updated_at, id) > ($2::timestamptz, $3::bigint) ORDER BY updated_at, id LIMIT 11`,
    [org.id, '2024-01-01T00:16:00Z', '1'],
  );
  console.log(results.join('\n'));
  console.log(plan.map((row) => row['QUERY PLAN']).join('\n'));
  await app.close();
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  await admin.close();
}
