import { createReadStream } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createOrganization } from './src/auth/organizations.js';
import { importJsonl } from './src/import/index.js';
import { migrate } from './src/store/migrate.js';
import { PostgresStore } from './src/store/postgres-store.js';
import { writeImportFile } from './bench/generate-import-file.js';
const url = 'postgres://postgres@127.0.0.1:5432/test';
const schema = `bench_${randomBytes(4).toString('hex')}`;
const admin = new PostgresStore(url, { poolSize: 1 });
await admin.query(`CREATE SCHEMA ${schema}`);
const store = new PostgresStore(url, { poolSize: 2, searchPath: schema });
await writeImportFile('/tmp/prof.jsonl', 100000);
await migrate(store);
const org = await createOrganization(store, 'Bench', 'org_bench');
const orig = store.transaction.bind(store);
store.transaction = (fn) => orig(async (tx) => fn({ ...tx, query: async (sql, p) => { const t = Date.now(); const r = await tx.query(sql, p); console.log(Date.now() - t, 'ms', sql.replace(/\s+/g, ' ').slice(0, 90)); return r; }, copyFrom: async (a, b) => { const t = Date.now(); const r = await tx.copyFrom(a, b); console.log(Date.now() - t, 'ms COPY'); return r; } }));
for (let i = 0; i < 2; i++) { const t = Date.now(); await importJsonl(store, org.uid, createReadStream('/tmp/prof.jsonl')); console.log('total', Date.now() - t); }
await store.close(); await admin.query(`DROP SCHEMA ${schema} CASCADE`); await admin.close();
