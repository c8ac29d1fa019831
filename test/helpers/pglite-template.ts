import { createHash, randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { PgliteStore } from '../../src/store/pglite-store.js';
import type { Store } from '../../src/store/store.js';

/*
 * Starting a PGlite cluster from scratch (initdb) and migrating it costs many
 * seconds of CPU; starting one from a data-directory tarball skips both. Every
 * test store starts from one migrated template: built once per set of
 * migrations and PGlite version (vitest's global setup builds it before any
 * test file runs), kept in the temp directory and shared by every file and run.
 */

async function templateFile(): Promise<string> {
  const pglitePackage = fileURLToPath(new URL('../../node_modules/@electric-sql/pglite/package.json', import.meta.url));
  const { version } = JSON.parse(await readFile(pglitePackage, 'utf8')) as { version: string };
  const fingerprint = createHash('sha256').update(version);
  for (const migration of await loadMigrations()) fingerprint.update(`${migration.version}\0${migration.sql}\0`);
  return join(tmpdir(), `lending-api-pglite-template-${fingerprint.digest('hex').slice(0, 16)}.tar`);
}

async function loadOrBuild(): Promise<Blob> {
  const file = await templateFile();
  try {
    return new Blob([await readFile(file)]);
  } catch {
    const store = await PgliteStore.open(undefined);
    await migrate(store);
    const dump = await store.dump();
    await store.close();
    // Written under a unique name and renamed, so nobody reads half a tarball.
    const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    await writeFile(partial, new Uint8Array(await dump.arrayBuffer()));
    await rename(partial, file);
    return dump;
  }
}

let template: Promise<Blob> | undefined;

/** The migrated template, read once per process. */
export function pgliteTemplate(): Promise<Blob> {
  template ??= loadOrBuild();
  return template;
}

/**
 * The shared_buffers of the embedded stores the tests open in-process: they
 * hold little and live briefly, and 16MB start in about half the CPU of
 * PGlite's 128MB default (vitest.config.ts gives spawned CLIs the same).
 */
export const TEST_SHARED_BUFFERS = '16MB';

/**
 * Creates a PGlite data directory at `dataDir` holding the migrated template,
 * for tests that run the CLI on a directory: their first command then opens a
 * migrated store instead of running initdb and every migration. `seed` runs
 * on the new store before it closes, so seeding costs no second start.
 */
export async function pgliteDirectoryFromTemplate(dataDir: string, seed?: (store: Store) => Promise<unknown>): Promise<void> {
  const store = await PgliteStore.open(dataDir, undefined, await pgliteTemplate(), { shared_buffers: TEST_SHARED_BUFFERS });
  try {
    await seed?.(store);
  } finally {
    await store.close();
  }
}

/** vitest global setup: build the template once, before the test files run in parallel. */
export async function setup(): Promise<void> {
  await pgliteTemplate();
}
