import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.js';
import { createOrganization } from '../../src/organizations/organizations.js';
import { migrate } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open-store.js';
import { runCli } from '../helpers/cli.js';
import { pgliteDirectoryFromTemplate, TEST_SHARED_BUFFERS } from '../helpers/pglite-template.js';
import { createExpiredApiKey } from '../helpers/tenants.js';

// Each command is a real process opening the embedded store: seconds each on a busy machine.
const CLI_TIMEOUT = 600_000;

const dir = mkdtempSync(path.join(tmpdir(), 'lending-cli-list-'));
const databaseUrl = `pglite://${path.join(dir, 'data')}`;
// Starts migrated (demo-and-serve.test.ts covers a CLI run on a fresh directory).
beforeAll(() => pgliteDirectoryFromTemplate(path.join(dir, 'data')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('lending-api --version and org list', { timeout: CLI_TIMEOUT }, () => {
  it('prints the version of package.json with --version and -V', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const result = await runCli([flag], databaseUrl);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
    }
  });

  it('lists organizations oldest first with their active keys, as text and with --json', async () => {
    const empty = await runCli(['org', 'list'], databaseUrl);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toContain('no organizations yet');

    // Seeded in this process: each CLI run costs seconds on a busy machine.
    const store = await openStore({ kind: 'pglite', dataDir: path.join(dir, 'data') }, { pgliteSharedBuffers: TEST_SHARED_BUFFERS });
    await migrate(store);
    try {
      await createOrganization(store, 'Acme Lending', 'org_acme');
      await createOrganization(store, 'Beta', 'org_beta');
      const revoked = await createApiKey(store, 'org_acme');
      await createApiKey(store, 'org_acme');
      await createExpiredApiKey(store, 'org_beta');
      await revokeApiKey(store, revoked.id);
    } finally {
      await store.close();
    }

    const listed = await runCli(['org', 'list', '--json'], databaseUrl);
    expect(listed.code).toBe(0);
    const organizations = JSON.parse(listed.stdout) as { uid: string; name: string; created_at: string; active_keys: number }[];
    expect(organizations.map(({ uid, name, active_keys }) => ({ uid, name, active_keys }))).toEqual([
      { uid: 'org_acme', name: 'Acme Lending', active_keys: 1 },
      { uid: 'org_beta', name: 'Beta', active_keys: 0 },
    ]);
    const text = await runCli(['org', 'list'], databaseUrl);
    expect(text.stdout).toMatch(/^org_acme {2}Acme Lending {2}\(created \S+; 1 active key\)\norg_beta {2}Beta {2}\(created \S+; 0 active keys\)\n$/);
  });
});
