import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { setUpDemo } from '../../src/cli/commands/demo.js';
import { DEMO_ORG_UID } from '../../src/cli/demo-data.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { postgresUrlWithSchema, runCli } from '../helpers/cli.js';
import { pgliteDirectoryFromTemplate, TEST_SHARED_BUFFERS } from '../helpers/pglite-template.js';
import { testStoreVariants } from '../helpers/stores.js';

// Each command is a real process; on a busy machine one opening the embedded store takes seconds.
const CLI_TIMEOUT = 600_000;

const dir = mkdtempSync(path.join(tmpdir(), 'lending-busy-port-'));
const dataDir = path.join(dir, 'data');
const databaseUrl = `pglite://${dataDir}`;
const env = { PGLITE_LOCK_TIMEOUT_MS: '300', LOG_LEVEL: 'silent' };
let occupier: net.Server;
let busyPort = 0;
/** The keys an earlier demo run printed. */
let earlier: { key: string; write_key: string };

beforeAll(async () => {
  await pgliteDirectoryFromTemplate(dataDir, async (store) => {
    earlier = await setUpDemo(store);
  });
  occupier = net.createServer();
  await new Promise<void>((resolve) => occupier.listen(0, '127.0.0.1', resolve));
  busyPort = (occupier.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => occupier.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Every file under `root` with a hash of its content: equal before and after means nothing was written. */
async function snapshot(root: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of await readdir(root, { recursive: true })) {
    const file = path.join(root, name);
    if ((await stat(file)).isFile()) files[name] = createHash('sha256').update(await readFile(file)).digest('hex');
  }
  return files;
}

/** The status an API request with `key` of the demo organization gets on `store`. */
async function statusWith(store: Store, key: string): Promise<number> {
  const app = await buildApp({ store });
  try {
    const response = await app.inject({ method: 'GET', url: '/api/methods/', headers: { authorization: `Basic ${Buffer.from(`${DEMO_ORG_UID}:${key}`).toString('base64')}` } });
    return response.statusCode;
  } finally {
    await app.close();
  }
}

/** The same, on the embedded store in `dataDir` (opened after the CLI process has let it go). */
async function statusOnDirectoryWith(key: string): Promise<number> {
  const store = await openStore({ kind: 'pglite', dataDir }, { poolSize: 1, pgliteSharedBuffers: TEST_SHARED_BUFFERS });
  try {
    return await statusWith(store, key);
  } finally {
    await store.close();
  }
}

const takenPortMessage = (port: number) =>
  `lending-api: cannot listen on 127.0.0.1:${port}: port ${port} is already in use (by another lending-api, or any other server). ` +
  `Nothing was changed: stop that process, or choose another port with --port ${port + 1} or PORT=${port + 1}\n`;

describe('a taken port', { timeout: CLI_TIMEOUT }, () => {
  it('stops `demo --serve` before it changes anything: the keys an earlier run printed keep working', async () => {
    const before = await snapshot(dataDir);
    const result = await runCli(['demo', '--serve', '--port', String(busyPort)], databaseUrl, undefined, env);

    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(takenPortMessage(busyPort));
    expect(await snapshot(dataDir)).toEqual(before);
    expect(await statusOnDirectoryWith(earlier.key)).toBe(200);
    expect(await statusOnDirectoryWith(earlier.write_key)).toBe(200);
  });

  it('stops `serve` with the same message when PORT names a taken port', async () => {
    const byEnv = await runCli(['serve'], databaseUrl, undefined, { ...env, PORT: String(busyPort) });
    expect(byEnv.code).toBe(1);
    expect(byEnv.stderr).toMatch(new RegExp(`^lending-api: cannot listen on 127\\.0\\.0\\.1:${busyPort}: port ${busyPort} is already in use .*--port ${busyPort + 1} or PORT=${busyPort + 1}\\n$`));
    expect(byEnv.stderr).not.toContain('EADDRINUSE');
  });
});

// On PostgreSQL (when DATABASE_URL names one): the demo organization's keys in the database are left as they were.
for (const variant of testStoreVariants().filter((candidate) => candidate.kind === 'postgres')) {
  describe('a taken port, on PostgreSQL', { timeout: CLI_TIMEOUT }, () => {
    let store: Store;
    let databaseUrlOfSchema = '';
    beforeAll(async () => {
      store = await variant.open();
      const [{ schema } = { schema: '' }] = await store.query<{ schema: string }>('SELECT current_schema() AS schema');
      databaseUrlOfSchema = postgresUrlWithSchema(process.env.DATABASE_URL ?? '', schema);
    });
    afterAll(async () => {
      await store.close();
    });

    it('stops `demo --serve` before it revokes or mints a key', async () => {
      const demo = await setUpDemo(store);
      const keysBefore = await store.query('SELECT id, revoked_at FROM api_keys ORDER BY id');
      const result = await runCli(['demo', '--serve', '--port', String(busyPort)], databaseUrlOfSchema, undefined, env);

      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(takenPortMessage(busyPort));
      expect(await store.query('SELECT id, revoked_at FROM api_keys ORDER BY id')).toEqual(keysBefore);
      expect(await statusWith(store, demo.key)).toBe(200);
      expect(await statusWith(store, demo.write_key)).toBe(200);
    });
  });
}
