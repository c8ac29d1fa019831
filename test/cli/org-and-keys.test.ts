import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { createOrganization } from '../../src/organizations/organizations.js';
import { runCli } from '../helpers/cli.js';
import { pgliteDirectoryFromTemplate } from '../helpers/pglite-template.js';

// Each command is a real process opening the embedded store: seconds each on a busy machine.
const CLI_TIMEOUT = 600_000;

const dir = mkdtempSync(path.join(tmpdir(), 'lending-cli-'));
const databaseUrl = `pglite://${path.join(dir, 'data')}`;
// Starts migrated (demo-and-serve.test.ts covers a CLI run on a fresh directory). The organizations
// and key that tests only start from are made in-process: a CLI process each costs seconds of CPU,
// and the first test runs `org create` and `key create` for real.
let secretKey: { id: string; key: string };
beforeAll(() =>
  pgliteDirectoryFromTemplate(path.join(dir, 'data'), async (store) => {
    await createOrganization(store, 'Expiry', 'org_expiry');
    await createOrganization(store, 'Secret', 'org_secret');
    secretKey = await createApiKey(store, 'org_secret');
  }),
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('lending-api org and key commands', { timeout: CLI_TIMEOUT }, () => {
  it('creates an organization and keys, lists and revokes them, with --json', async () => {
    const org = await runCli(['org', 'create', '--name', 'Acme Lending', '--uid', 'org_acme', '--json'], databaseUrl);
    expect(org.stderr).toBe('');
    expect(org.code).toBe(0);
    expect(JSON.parse(org.stdout)).toEqual({ uid: 'org_acme', name: 'Acme Lending' });

    const key = await runCli(['key', 'create', '--org', 'org_acme', '--json'], databaseUrl);
    expect(key.code).toBe(0);
    const created = JSON.parse(key.stdout) as { id: string; org: string; key: string; scope: string };
    expect(created.org).toBe('org_acme');
    expect(created.scope).toBe('read');
    expect(created.id).toMatch(/^key_[0-9a-f]{16}$/);
    expect(created.key).toMatch(/^lak_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);

    const expiring = JSON.parse(
      (await runCli(['key', 'create', '--org', 'org_acme', '--expires', '2099-01-01', '--scope', 'write', '--json'], databaseUrl)).stdout,
    ) as { id: string; scope: string };
    expect(expiring.scope).toBe('write');

    const list = await runCli(['key', 'list', '--org', 'org_acme', '--json'], databaseUrl);
    const keys = JSON.parse(list.stdout) as { id: string; status: string; expires_at: string | null; scope: string }[];
    expect(keys.map((k) => [k.id, k.status, k.expires_at, k.scope])).toEqual([
      [created.id, 'active', null, 'read'],
      [expiring.id, 'active', '2099-01-01T00:00:00.000000Z', 'write'],
    ]);
    expect(list.stdout).not.toContain(created.key);

    const revoke = await runCli(['key', 'revoke', created.id, '--json'], databaseUrl);
    expect(revoke.code).toBe(0);
    expect(JSON.parse(revoke.stdout)).toMatchObject({ id: created.id, org: 'org_acme' });
    const human = await runCli(['key', 'list', '--org', 'org_acme'], databaseUrl);
    expect(human.stdout).toMatch(new RegExp(`${created.id}\\s+revoked`));
  });

  it('refuses a key that would expire in the past (regression: it printed a dead key and exited 0)', async () => {
    const dead = await runCli(['key', 'create', '--org', 'org_expiry', '--expires', '2020-01-01'], databaseUrl);
    expect(dead.code).toBe(1);
    expect(dead.stdout).toBe('');
    expect(dead.stderr).toContain('expiry 2020-01-01T00:00:00.000000Z is not in the future');
    const list = await runCli(['key', 'list', '--org', 'org_expiry', '--json'], databaseUrl);
    expect(JSON.parse(list.stdout)).toEqual([]);
  });

  it('never prints a secret passed to key revoke, and names the key id to pass instead (regression: it echoed the secret)', async () => {
    const created = secretKey;
    const malformed = `${created.key.slice(0, -1)}`; // a secret with a character lost in copying

    const whole = await runCli(['key', 'revoke', created.key], databaseUrl);
    const broken = await runCli(['key', 'revoke', malformed, '--json'], databaseUrl);

    expect(whole.code).toBe(1);
    expect(whole.stderr).toContain(`pass the key id instead (this key's id is ${created.id})`);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('pass the key id instead (key ids look like key_');
    for (const output of [whole.stdout, whole.stderr, broken.stdout, broken.stderr]) {
      expect(output).not.toContain(created.key.slice(21)); // the secret part
    }
    const list = await runCli(['key', 'list', '--org', 'org_secret', '--json'], databaseUrl);
    expect(JSON.parse(list.stdout)).toMatchObject([{ id: created.id, status: 'active' }]);
  });

  it('prints human text without --json', async () => {
    const org = await runCli(['org', 'create', '--name', 'Beta'], databaseUrl);
    expect(org.code).toBe(0);
    expect(org.stdout).toMatch(/^created organization org_[0-9a-f]{16} \(Beta\)/);
  });

  it('fails with a message on stderr and a non-zero exit', async () => {
    const duplicate = await runCli(['org', 'create', '--name', 'Again', '--uid', 'org_acme'], databaseUrl);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stdout).toBe('');
    expect(duplicate.stderr).toContain("organization 'org_acme' already exists");
    const noOrg = await runCli(['key', 'create', '--org', 'org_missing', '--json'], databaseUrl);
    expect(noOrg.code).toBe(1);
    expect(noOrg.stderr).toContain("no organization 'org_missing'");
    const badExpiry = await runCli(['key', 'create', '--org', 'org_acme', '--expires', 'tomorrow'], databaseUrl);
    expect(badExpiry.code).toBe(1);
    expect(badExpiry.stderr).toContain('--expires must be an ISO 8601 timestamp');
    const prune = await runCli(['idempotency', 'prune', '--json'], databaseUrl);
    expect(prune.code, prune.stderr).toBe(0);
    expect(JSON.parse(prune.stdout)).toEqual({ deleted: 0 });
    const badScope = await runCli(['key', 'create', '--org', 'org_acme', '--scope', 'admin'], databaseUrl);
    expect(badScope.code).toBe(1);
    expect(badScope.stderr).toContain("--scope must be one of read, write, webhooks, got 'admin'");
    const unknownKey = await runCli(['key', 'revoke', 'key_0000000000000000'], databaseUrl);
    expect(unknownKey.code).toBe(1);
    expect(unknownKey.stderr).toContain("no API key 'key_0000000000000000'");
    const badUrl = await runCli(['migrate'], 'mysql://nope');
    expect(badUrl.code).toBe(1);
    expect(badUrl.stderr).toContain('DATABASE_URL must start with postgres://');
    const usage = await runCli(['org', 'create'], databaseUrl);
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain("required option '--name <name>' not specified");
  });
});
