import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { loadWebhookKey, webhookKeyFileOf } from '../../src/webhooks/webhook-key.js';
import { runCli } from '../helpers/cli.js';

describe('webhook settings', () => {
  const key = randomBytes(32);

  it('reads WEBHOOK_SECRET_KEY as base64 (standard or URL-safe, padded or not) or hex, and never shows it', () => {
    for (const text of [key.toString('base64'), key.toString('base64url'), key.toString('hex'), ` ${key.toString('hex').toUpperCase()} `]) {
      const config = loadConfig({ WEBHOOK_SECRET_KEY: text });
      const box = config.webhookSecretKey!.box();
      expect(box.open(loadConfig({ WEBHOOK_SECRET_KEY: key.toString('base64') }).webhookSecretKey!.box().seal('whsec_x'))).toBe('whsec_x');
      expect(JSON.stringify(config)).not.toContain(key.toString('base64').slice(0, 20));
      expect(inspect(config)).not.toContain(key.toString('hex').slice(0, 20));
    }
    expect(loadConfig({}).webhookSecretKey).toBeUndefined();
  });

  it('refuses a key that is not 32 bytes, naming the variable but not quoting the value', () => {
    for (const bad of ['secret', randomBytes(31).toString('base64'), randomBytes(33).toString('hex'), `${key.toString('hex')}0`]) {
      let thrown: unknown;
      try {
        loadConfig({ WEBHOOK_SECRET_KEY: bad });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, bad).toBeInstanceOf(ConfigError);
      expect((thrown as ConfigError).message).toMatch(/^WEBHOOK_SECRET_KEY must be 32 random bytes as base64/);
      expect((thrown as ConfigError).message).not.toContain(bad);
    }
  });

  it('reads WEBHOOK_ALLOW_PRIVATE, WEBHOOK_ALLOWED_HOSTS and EVENT_RETENTION_DAYS, refusing bad values by name', () => {
    expect(loadConfig({}).webhookDestinations).toEqual({ allowPrivate: false, allowHosts: [] });
    expect(loadConfig({}).eventRetentionDays).toBe(30);
    const config = loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_ALLOWED_HOSTS: 'Hooks.Internal, 10.0.0.5,[fd00::7]', EVENT_RETENTION_DAYS: '7' });
    expect(config.webhookDestinations).toEqual({ allowPrivate: true, allowHosts: ['hooks.internal', '10.0.0.5', '[fd00::7]'] });
    expect(config.eventRetentionDays).toBe(7);
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE: '0' }).webhookDestinations.allowPrivate).toBe(false);
    expect(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'maybe' })).toThrow(/^WEBHOOK_ALLOW_PRIVATE /);
    expect(() => loadConfig({ WEBHOOK_ALLOWED_HOSTS: 'https://hooks.internal/' })).toThrow(/^WEBHOOK_ALLOWED_HOSTS /);
    expect(() => loadConfig({ WEBHOOK_ALLOWED_HOSTS: 'a.example,,b.example' })).toThrow(/^WEBHOOK_ALLOWED_HOSTS /);
    expect(() => loadConfig({ EVENT_RETENTION_DAYS: '0' })).toThrow(/^EVENT_RETENTION_DAYS /);
  });

  it('reads WEBHOOK_DELIVERY (serve --deliver) and WEBHOOK_POLL_INTERVAL_MS, refusing bad values by name', () => {
    expect(loadConfig({})).toMatchObject({ webhookDelivery: true, webhookPollIntervalMs: 500 });
    expect(loadConfig({ WEBHOOK_DELIVERY: 'off', WEBHOOK_POLL_INTERVAL_MS: '100' })).toMatchObject({ webhookDelivery: false, webhookPollIntervalMs: 100 });
    expect(loadConfig({ WEBHOOK_DELIVERY: 'on' }, { WEBHOOK_DELIVERY: 'off' }).webhookDelivery).toBe(false);
    expect(() => loadConfig({ WEBHOOK_DELIVERY: 'sometimes' })).toThrow(/^WEBHOOK_DELIVERY /);
    expect(() => loadConfig({ WEBHOOK_POLL_INTERVAL_MS: '0' })).toThrow(/^WEBHOOK_POLL_INTERVAL_MS /);
  });
});

describe('the process webhook key', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'webhook-key-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('on the embedded store: generates <dir>.webhook-key once, mode 0600, and every later start reads the same key', async () => {
    const dataDir = path.join(dir, 'data/');
    const file = webhookKeyFileOf(dataDir);
    expect(file).toBe(path.join(dir, 'data.webhook-key'));
    // Starts racing for the file agree on one key.
    const loads = await Promise.all(Array.from({ length: 5 }, () => loadWebhookKey({ kind: 'pglite', dataDir }, undefined)));
    expect(loads.filter((load) => load.source.kind === 'file' && load.source.created)).toHaveLength(1);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const sealed = loads[0]!.box!.seal('whsec_first');
    for (const load of loads) expect(load.box!.open(sealed)).toBe('whsec_first');
    const later = await loadWebhookKey({ kind: 'pglite', dataDir }, undefined);
    expect(later.source).toEqual({ kind: 'file', path: file, created: false });
    expect(later.box!.open(sealed)).toBe('whsec_first');
    expect((await readFile(file, 'utf8')).trim()).toMatch(/^[A-Za-z0-9+/]{43}=$/);
  });

  it('refuses a damaged key file, naming it, rather than sealing with another key', async () => {
    const dataDir = path.join(dir, 'damaged');
    await writeFile(webhookKeyFileOf(dataDir), 'not a key\n', { mode: 0o600 });
    await expect(loadWebhookKey({ kind: 'pglite', dataDir }, undefined)).rejects.toThrow(/damaged\.webhook-key.*WEBHOOK_SECRET_KEY/);
  });

  it('uses WEBHOOK_SECRET_KEY when set, a random key for pglite://memory, and none on PostgreSQL without it', async () => {
    const configured = loadConfig({ WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex') }).webhookSecretKey;
    const dataDir = path.join(dir, 'configured');
    expect((await loadWebhookKey({ kind: 'pglite', dataDir }, configured)).source).toEqual({ kind: 'configured' });
    await expect(stat(webhookKeyFileOf(dataDir))).rejects.toThrow();
    const memory = await loadWebhookKey({ kind: 'pglite', dataDir: undefined }, undefined);
    expect(memory.source.kind).toBe('in-process');
    expect(memory.box).toBeDefined();
    expect(await loadWebhookKey({ kind: 'postgres', url: 'postgres://db/x' }, undefined)).toEqual({ box: undefined, source: { kind: 'missing' } });
  });

  it('serve refuses to start with a bad WEBHOOK_SECRET_KEY, naming the variable', async () => {
    const result = await runCli(['serve', '--port', '0'], 'pglite://memory', undefined, { WEBHOOK_SECRET_KEY: 'too-short-to-be-a-key' });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('WEBHOOK_SECRET_KEY must be 32 random bytes');
    expect(result.stderr).not.toContain('too-short-to-be-a-key');
  });
});
