import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { distribute } from '../../src/store/citus-distribution.js';
import { migrate } from '../../src/store/migrate.js';
import { PgliteStore } from '../../src/store/pglite-store.js';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres-store.js';
import type { Store, StoreKind } from '../../src/store/store.js';
import { pgliteTemplate, TEST_SHARED_BUFFERS } from './pglite-template.js';

const DISTRIBUTE_ON_CITUS = process.env.TEST_DISTRIBUTE_ON_CITUS === '1';

export interface TestStoreVariant {
  readonly kind: StoreKind;
  open(): Promise<Store>;
}

/**
 * The stores every suite runs on: PGlite in memory always, and PostgreSQL
 * when DATABASE_URL points at one. Each PostgreSQL suite gets its own schema,
 * so suites run in parallel and leave nothing behind.
 */
export function testStoreVariants(): TestStoreVariant[] {
  const url = process.env.DATABASE_URL;
  // `npm run test:citus`: the suites on a Citus coordinator only, each schema distributed (test/citus/run.ts).
  if (DISTRIBUTE_ON_CITUS && url) return [{ kind: 'postgres', open: () => openPostgresTestStore(url) }];
  const variants: TestStoreVariant[] = [{ kind: 'pglite', open: openPgliteTestStore }];
  if (url && /^postgres(ql)?:/.test(url)) variants.push({ kind: 'postgres', open: () => openPostgresTestStore(url) });
  else if (process.env.CI) throw new Error('CI must run the suite on PostgreSQL too: set DATABASE_URL=postgres://…');
  return variants;
}

/** A fresh in-memory PGlite with the schema migrated, copied from the shared template. */
export async function openPgliteTestStore(): Promise<Store> {
  const store = await PgliteStore.open(undefined, undefined, await pgliteTemplate(), { shared_buffers: TEST_SHARED_BUFFERS });
  await migrate(store); // applies nothing unless the template is older than the migrations
  return store;
}

export async function openPostgresTestStore(url = process.env.DATABASE_URL ?? '', poolSize = 8, options: Pick<PostgresStoreOptions, 'poolWaitMs'> = {}): Promise<Store> {
  const schema = `test_${randomBytes(6).toString('hex')}`;
  // Through PgBouncer (no `options` startup parameter) a suite is isolated by
  // a role of its own whose search_path is its schema (test/topology/suite-through-pgbouncer.ts).
  const byRole = process.env.TEST_SCHEMA_BY_ROLE === '1';
  const admin = new PostgresStore(url, { poolSize: 1 });
  if (byRole) {
    await admin.query(`CREATE ROLE ${schema} LOGIN`);
    await admin.query(`ALTER ROLE ${schema} SET search_path = ${schema}`);
    await admin.query(`CREATE SCHEMA ${schema} AUTHORIZATION ${schema}`);
  } else await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.close();
  const roleUrl = new URL(url);
  roleUrl.username = schema;
  const store = new PostgresStore(byRole ? roleUrl.toString() : url, {
    ...options,
    poolSize,
    ...(byRole ? {} : { searchPath: schema }),
    namedStatements: process.env.DATABASE_PREPARED_STATEMENTS !== 'false',
  });
  await migrate(store);
  if (DISTRIBUTE_ON_CITUS) await distribute(store);
  const close = store.close.bind(store);
  store.close = async () => {
    await store.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
    await close();
    if (byRole) {
      const dropper = new PostgresStore(url, { poolSize: 1 });
      await dropper.query(`DROP ROLE IF EXISTS ${schema}`).catch(() => {});
      await dropper.close();
    }
  };
  return store;
}

/**
 * One PostgreSQL schema per test file: the suites of a file share it (each
 * test makes its own tenants), opened by the first suite and dropped after
 * the last one. Vitest collects every suite of a file before running any,
 * so the count of users is complete before the first one closes; files run
 * one after another in a worker, so a file that collects its first suite
 * starts the count afresh: a suite whose every test is skipped runs no
 * hooks, so its file's count never got back to 0, and without the fresh
 * start every later file of the worker shared one schema (a deliverer's
 * round then delivered the earlier files' deliveries too).
 */
const sharedPostgres = { file: undefined as string | undefined, users: 0, store: undefined as Promise<Store> | undefined };

function openVariant(variant: TestStoreVariant): { open(): Promise<Store>; close(store: Store | undefined): Promise<void> } {
  if (variant.kind !== 'postgres') return { open: () => variant.open(), close: async (store) => store?.close() };
  const file = expect.getState().testPath;
  if (sharedPostgres.file !== file) {
    const left = sharedPostgres.store;
    Object.assign(sharedPostgres, { file, users: 0, store: undefined });
    void left?.then((store) => store.close()).catch(() => {});
  }
  sharedPostgres.users += 1;
  return {
    open: () => (sharedPostgres.store ??= variant.open()),
    close: async () => {
      sharedPostgres.users -= 1;
      if (sharedPostgres.users > 0) return;
      // The test files of a worker share this module (isolate: false): the next file opens a schema of its own.
      const store = sharedPostgres.store;
      sharedPostgres.store = undefined;
      await (await store)?.close();
    },
  };
}

/**
 * Declares `body` once per store, inside `describe('on <kind>')`, with a
 * migrated store opened before and closed after: a fresh copy of the PGlite
 * template per suite, the file's schema on PostgreSQL.
 */
export function describeEachStore(title: string, body: (store: () => Store, kind: StoreKind) => void): void {
  for (const variant of testStoreVariants()) {
    describe(`${title} (on ${variant.kind})`, () => {
      const lifecycle = openVariant(variant);
      let store: Store | undefined;
      beforeAll(async () => {
        store = await lifecycle.open();
      });
      afterAll(async () => {
        await lifecycle.close(store);
      });
      body(() => {
        if (!store) throw new Error('store not open yet');
        return store;
      }, variant.kind);
    });
  }
}

/**
 * Whether this suite runs on a Citus coordinator with its schema distributed (`npm run test:citus`).
 * Only for what Citus itself refuses before the schema's own checks can (a row's org_id changed: its
 * distribution column); a test asserts the refusal and that nothing changed on every engine.
 */
export function distributedOnCitus(kind: StoreKind): boolean {
  return DISTRIBUTE_ON_CITUS && kind === 'postgres';
}
