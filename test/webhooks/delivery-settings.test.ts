import { expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

it('reads the webhook delivery settings, with their defaults', () => {
  expect(loadConfig({}).webhookDelivery).toEqual({ allowPrivate: false, allowHosts: [], secretKey: undefined, eventRetentionDays: 30, claimMs: 30_000 });
  const key = Buffer.alloc(32, 7);
  const read = loadConfig({
    WEBHOOK_ALLOW_PRIVATE: '1',
    WEBHOOK_ALLOWED_HOSTS: 'hooks.internal, 10.0.0.5',
    WEBHOOK_SECRET_KEY: key.toString('base64'),
    EVENT_RETENTION_DAYS: '7',
    WEBHOOK_CLAIM_MS: '60000',
  }).webhookDelivery;
  expect(read).toEqual({ allowPrivate: true, allowHosts: ['hooks.internal', '10.0.0.5'], secretKey: key, eventRetentionDays: 7, claimMs: 60_000 });
  expect(loadConfig({ WEBHOOK_SECRET_KEY: key.toString('hex') }).webhookDelivery.secretKey).toEqual(key);
});

it('refuses a bad value, naming the variable', () => {
  for (const [variable, value] of [
    ['EVENT_RETENTION_DAYS', '0'],
    ['WEBHOOK_CLAIM_MS', '5000'],
    ['WEBHOOK_ALLOW_PRIVATE', 'yes'],
    ['WEBHOOK_SECRET_KEY', 'c2hvcnQ='],
  ] as const) {
    expect(() => loadConfig({ [variable]: value }), variable).toThrow(ConfigError);
    expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`^${variable} `));
  }
});
