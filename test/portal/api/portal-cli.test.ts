import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../../src/auth/api-keys.js';
import { createOrganization } from '../../../src/organizations/organizations.js';
import { PgliteStore } from '../../../src/store/pglite-store.js';
import { buildApp } from '../../helpers/app.js';
import { runCli } from '../../helpers/cli.js';
import { pgliteDirectoryFromTemplate, TEST_SHARED_BUFFERS } from '../../helpers/pglite-template.js';
import { exchange, tokenOfLink } from './portal-helpers.js';

// Each command is a real process opening the embedded store: seconds each on a busy machine.
const CLI_TIMEOUT = 600_000;

const dir = mkdtempSync(path.join(tmpdir(), 'lending-portal-cli-'));
const dataDir = path.join(dir, 'data');
const databaseUrl = `pglite://${dataDir}`;
let readKey: { id: string; key: string };
let writeKey: { id: string; key: string };
beforeAll(() =>
  pgliteDirectoryFromTemplate(dataDir, async (store) => {
    await createOrganization(store, 'Portal CLI', 'org_portal_cli');
    readKey = await createApiKey(store, 'org_portal_cli');
    writeKey = await createApiKey(store, 'org_portal_cli', undefined, 'write');
    await createOrganization(store, 'Writers only', 'org_writers_only');
    await createApiKey(store, 'org_writers_only', undefined, 'write');
  }),
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Exchanges the links' tokens on an app over the directory (once the CLI has let go of it). */
async function exchangeAll(tokens: readonly string[]): Promise<{ status: number; body: Record<string, unknown> }[]> {
  const store = await PgliteStore.open(dataDir, undefined, undefined, { shared_buffers: TEST_SHARED_BUFFERS });
  const app = await buildApp({ store });
  try {
    const answers = [];
    for (const token of tokens) {
      const response = await exchange(app, token);
      answers.push({ status: response.statusCode, body: response.json<Record<string, unknown>>() });
    }
    return answers;
  } finally {
    await app.close();
    await store.close();
  }
}

describe('lending-api portal', { timeout: CLI_TIMEOUT }, () => {
  it('prints a working one-time link: the newest read key’s by default, the named key’s with --key, under --url', async () => {
    const byDefault = await runCli(['portal', '--org', 'org_portal_cli', '--url', 'https://lend.example.com/'], databaseUrl);
    expect(byDefault.stderr).toBe('');
    expect(byDefault.code).toBe(0);
    const defaultUrl = byDefault.stdout.split('\n')[0]!;
    expect(defaultUrl.startsWith('https://lend.example.com/portal/#token=lpt_')).toBe(true);
    expect(byDefault.stdout).toContain(`with key ${readKey.id} (read)`);

    const named = await runCli(['portal', '--org', 'org_portal_cli', '--key', writeKey.id, '--json'], databaseUrl, undefined, { PUBLIC_URL: 'https://public.example.com' });
    expect(named.code).toBe(0);
    const link = JSON.parse(named.stdout) as { url: string; key_id: string; scope: string; expires_at: string };
    expect(link).toMatchObject({ key_id: writeKey.id, scope: 'write' });
    expect(link.url.startsWith('https://public.example.com/portal/#token=')).toBe(true);

    const [read, write, again] = await exchangeAll([tokenOfLink(defaultUrl), tokenOfLink(link.url), tokenOfLink(link.url)]);
    expect(read).toMatchObject({ status: 201, body: { organization_id: 'org_portal_cli', scopes: ['read'] } });
    expect(write).toMatchObject({ status: 201, body: { organization_id: 'org_portal_cli', scopes: ['read', 'write'] } });
    expect(again!.status).toBe(401);
  });

  it('refuses a key given in full without printing it, and says which keys there are when none fits', async () => {
    const secret = await runCli(['portal', '--org', 'org_portal_cli', '--key', readKey.key], databaseUrl);
    expect(secret.code).not.toBe(0);
    expect(secret.stderr).toContain('key id');
    expect(secret.stderr + secret.stdout).not.toContain(readKey.key.slice(-20));

    const noRead = await runCli(['portal', '--org', 'org_writers_only'], databaseUrl);
    expect(noRead.code).not.toBe(0);
    expect(noRead.stderr).toMatch(/no active read key.*--key.*key_[0-9a-f]{16} \(write\)/);
  });
});
