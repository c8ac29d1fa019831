import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newSigningSecret } from '../../src/webhooks/signature.js';
import { verifyWebhook, WebhookVerificationError } from '../../src/webhooks/verify-webhook.js';

const event = { id: 'evt_1', object: 'event', type: 'credit_limit.updated', data: { object: { balance: '10.00', name: 'Zoë ✓' } } };
const body = JSON.stringify(event);
const NOW = 1_760_000_000;

/** Headers as the reference library (standardwebhooks) signs them. */
function signedByReference(secret: string, timestamp = NOW, id = 'evt_1', payload = body) {
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': new Webhook(secret).sign(id, new Date(timestamp * 1000), payload) };
}

async function failure(promise: Promise<unknown>): Promise<WebhookVerificationError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(WebhookVerificationError);
  return error as WebhookVerificationError;
}

describe('verifyWebhook', () => {
  it('returns the event of a delivery signed by the reference library', async () => {
    const secret = newSigningSecret();
    await expect(verifyWebhook(body, signedByReference(secret), secret, { now: NOW })).resolves.toEqual(event);
  });

  it('accepts Fetch Headers, mixed-case names and array values', async () => {
    const secret = newSigningSecret();
    const headers = signedByReference(secret);
    await expect(verifyWebhook(body, new Headers(headers), secret, { now: NOW })).resolves.toEqual(event);
    const shouted = { 'Webhook-Id': headers['webhook-id'], 'WEBHOOK-TIMESTAMP': headers['webhook-timestamp'], 'webhook-signature': [headers['webhook-signature']] };
    await expect(verifyWebhook(body, shouted, secret, { now: NOW })).resolves.toEqual(event);
  });

  it('accepts when one of several signatures matches (a rotation) and ignores other versions', async () => {
    const [secret, other] = [newSigningSecret(), newSigningSecret()];
    const headers = signedByReference(secret);
    const signature = `v2,abc ${signedByReference(other)['webhook-signature']} ${headers['webhook-signature']}`;
    await expect(verifyWebhook(body, { ...headers, 'webhook-signature': signature }, secret, { now: NOW })).resolves.toEqual(event);
  });

  it('rejects a tampered body, id or timestamp, and another secret', async () => {
    const secret = newSigningSecret();
    const headers = signedByReference(secret);
    const tamperedBody = body.replace('10.00', '99.00');
    expect((await failure(verifyWebhook(tamperedBody, headers, secret, { now: NOW }))).code).toBe('no_matching_signature');
    expect((await failure(verifyWebhook(body, { ...headers, 'webhook-id': 'evt_2' }, secret, { now: NOW }))).code).toBe('no_matching_signature');
    expect((await failure(verifyWebhook(body, { ...headers, 'webhook-timestamp': String(NOW + 1) }, secret, { now: NOW }))).code).toBe('no_matching_signature');
    expect((await failure(verifyWebhook(body, headers, newSigningSecret(), { now: NOW }))).code).toBe('no_matching_signature');
    const truncated = { ...headers, 'webhook-signature': headers['webhook-signature'].slice(0, -4) };
    expect((await failure(verifyWebhook(body, truncated, secret, { now: NOW }))).code).toBe('no_matching_signature');
  });

  it('names the missing header', async () => {
    const secret = newSigningSecret();
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const headers: Record<string, string | undefined> = { ...signedByReference(secret), [name]: undefined };
      const error = await failure(verifyWebhook(body, headers, secret, { now: NOW }));
      expect(error.code).toBe('missing_header');
      expect(error.message).toContain(name);
    }
  });

  it('rejects a timestamp outside the tolerance either way, and one that is not a number', async () => {
    const secret = newSigningSecret();
    await expect(verifyWebhook(body, signedByReference(secret, NOW - 300), secret, { now: NOW })).resolves.toEqual(event);
    expect((await failure(verifyWebhook(body, signedByReference(secret, NOW - 301), secret, { now: NOW }))).code).toBe('timestamp_too_old');
    expect((await failure(verifyWebhook(body, signedByReference(secret, NOW + 301), secret, { now: NOW }))).code).toBe('timestamp_too_new');
    await expect(verifyWebhook(body, signedByReference(secret, NOW - 3000), secret, { now: NOW, toleranceSeconds: 3600 })).resolves.toEqual(event);
    const garbled = { ...signedByReference(secret), 'webhook-timestamp': '17e8' };
    expect((await failure(verifyWebhook(body, garbled, secret, { now: NOW }))).code).toBe('invalid_timestamp');
  });

  it('uses the clock when no time is given', async () => {
    const secret = newSigningSecret();
    const timestamp = Math.floor(Date.now() / 1000);
    await expect(verifyWebhook(body, signedByReference(secret, timestamp), secret)).resolves.toEqual(event);
    expect((await failure(verifyWebhook(body, signedByReference(secret, NOW - 86_400 * 365), secret))).code).toBe('timestamp_too_old');
  });

  it('refuses a malformed secret and a signed body that is not JSON', async () => {
    expect((await failure(verifyWebhook(body, signedByReference(newSigningSecret()), 'whsec_***', { now: NOW }))).code).toBe('invalid_secret');
    const secret = newSigningSecret();
    const text = 'not json';
    expect((await failure(verifyWebhook(text, signedByReference(secret, NOW, 'evt_1', text), secret, { now: NOW }))).code).toBe('invalid_body');
  });
});
