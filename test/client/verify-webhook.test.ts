import { readFile } from 'node:fs/promises';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError, type Event } from '../../packages/client/src/index.js';
import { newSigningSecret, signPayload } from '../../src/webhooks/signature.js';

// The SDK's verifyWebhook, as a receiver uses it: deliveries signed by the
// reference library (standardwebhooks) and by the service's own signer.
const delivered: Event = {
  id: 'evt_1',
  object: 'event',
  type: 'loan.repaid',
  created_at: '2026-11-28T03:13:08.664000Z',
  api_version: '2026-11-25',
  data: {
    object: {
      uid: 'ln_1',
      entity: 'ent_1',
      credit_limit: 'cl_1',
      payment_method: 'pm_1',
      currency: 'USD',
      principal: 125.5,
      outstanding: 0,
      status: 'repaid',
      reference: 'Zoë ✓',
      created_at: '2026-11-28T03:13:08.000000Z',
      updated_at: '2026-11-28T03:13:08.664000Z',
    },
    previous_attributes: { status: 'active', outstanding: 125.5 },
  },
  request_id: 'req_1',
  idempotency_key: 'loan-1-rp',
  import_id: null,
};
const body = JSON.stringify(delivered);
const NOW = 1_764_299_588;

const referenceHeaders = (secret: string, id = delivered.id, timestamp = NOW) => ({
  'webhook-id': id,
  'webhook-timestamp': String(timestamp),
  'webhook-signature': new Webhook(secret).sign(id, new Date(timestamp * 1000), body),
});

describe('verifyWebhook in the SDK', () => {
  it('is the service’s dependency-free verifier, unchanged', async () => {
    const [shipped, original] = await Promise.all([
      readFile(new URL('../../packages/client/src/verify-webhook.ts', import.meta.url), 'utf8'),
      readFile(new URL('../../src/webhooks/verify-webhook.ts', import.meta.url), 'utf8'),
    ]);
    expect(shipped, 'copy src/webhooks/verify-webhook.ts to packages/client/src/ again').toBe(original);
    expect(shipped).not.toMatch(/^import /m);
  });

  it('returns the event of a delivery signed by standardwebhooks', async () => {
    const secret = newSigningSecret();
    const event = await verifyWebhook<Event>(body, referenceHeaders(secret), secret, { now: NOW });
    expect(event).toEqual(delivered);
    expect(event.data.previous_attributes).toEqual({ status: 'active', outstanding: 125.5 });
  });

  it('accepts the two signatures sent while a rotated-out secret still signs, with either secret, and Fetch Headers', async () => {
    const [oldSecret, newSecret] = [newSigningSecret(), newSigningSecret()];
    const signature = signPayload({ id: delivered.id, timestamp: NOW, body }, [newSecret, oldSecret]);
    const headers = new Headers({ 'Webhook-Id': delivered.id, 'Webhook-Timestamp': String(NOW), 'Webhook-Signature': signature });
    await expect(verifyWebhook(body, headers, oldSecret, { now: NOW })).resolves.toEqual(delivered);
    await expect(verifyWebhook(body, headers, newSecret, { now: NOW })).resolves.toEqual(delivered);
  });

  it('refuses a changed body, another secret, a replayed old delivery and a missing header, saying which', async () => {
    const secret = newSigningSecret();
    const headers = referenceHeaders(secret);
    const codeOf = (promise: Promise<unknown>) =>
      promise.then(
        () => 'accepted',
        (error: unknown) => (error instanceof WebhookVerificationError ? error.code : String(error)),
      );
    expect(await codeOf(verifyWebhook(body.replace('125.5', '1.5'), headers, secret, { now: NOW }))).toBe('no_matching_signature');
    expect(await codeOf(verifyWebhook(body, headers, newSigningSecret(), { now: NOW }))).toBe('no_matching_signature');
    expect(await codeOf(verifyWebhook(body, headers, secret, { now: NOW + 301 }))).toBe('timestamp_too_old');
    expect(await codeOf(verifyWebhook(body, headers, secret, { now: NOW + 3600, toleranceSeconds: 3600 }))).toBe('accepted');
    expect(await codeOf(verifyWebhook(body, { ...headers, 'webhook-id': undefined }, secret, { now: NOW }))).toBe('missing_header');
    expect(await codeOf(verifyWebhook(body, headers, 'not a secret', { now: NOW }))).toBe('invalid_secret');
  });
});
