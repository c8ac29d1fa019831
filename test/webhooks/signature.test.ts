import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newSigningSecret, signPayload, signingKey } from '../../src/webhooks/signature.js';

const now = () => Math.floor(Date.now() / 1000);
const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'loan.created', data: { object: { amount: '12.50', note: 'ünïcödé ✓' } } });

function headersFor(id: string, timestamp: number, signature: string) {
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

describe('signPayload', () => {
  it('produces a signature the reference library (standardwebhooks) accepts', () => {
    const secret = newSigningSecret();
    const timestamp = now();
    const signature = signPayload({ id: 'evt_1', timestamp, body }, [secret]);
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headersFor('evt_1', timestamp, signature))).toEqual(JSON.parse(body));
  });

  it('matches the reference library byte for byte', () => {
    const secret = newSigningSecret();
    const timestamp = now();
    expect(signPayload({ id: 'evt_2', timestamp, body }, [secret])).toBe(new Webhook(secret).sign('evt_2', new Date(timestamp * 1000), body));
  });

  it('is rejected by the reference library when the body, id or timestamp was changed', () => {
    const secret = newSigningSecret();
    const timestamp = now();
    const signature = signPayload({ id: 'evt_1', timestamp, body }, [secret]);
    const webhook = new Webhook(secret);
    expect(() => webhook.verify(body.replace('12.50', '99.50'), headersFor('evt_1', timestamp, signature))).toThrow(/No matching signature/);
    expect(() => webhook.verify(body, headersFor('evt_9', timestamp, signature))).toThrow(/No matching signature/);
    expect(() => webhook.verify(body, headersFor('evt_1', timestamp - 1, signature))).toThrow(/No matching signature/);
    expect(() => new Webhook(newSigningSecret()).verify(body, headersFor('evt_1', timestamp, signature))).toThrow(/No matching signature/);
  });

  it('signs with every secret during a rotation, and either secret alone verifies', () => {
    const [oldSecret, newSecret] = [newSigningSecret(), newSigningSecret()];
    const timestamp = now();
    const signature = signPayload({ id: 'evt_1', timestamp, body }, [newSecret, oldSecret]);
    expect(signature.split(' ')).toHaveLength(2);
    expect(new Webhook(oldSecret).verify(body, headersFor('evt_1', timestamp, signature))).toEqual(JSON.parse(body));
    expect(new Webhook(newSecret).verify(body, headersFor('evt_1', timestamp, signature))).toEqual(JSON.parse(body));
    expect(() => new Webhook(newSigningSecret()).verify(body, headersFor('evt_1', timestamp, signature))).toThrow();
  });

  it('refuses no secret, a malformed secret and a timestamp that is not whole seconds', () => {
    expect(() => signPayload({ id: 'evt_1', timestamp: now(), body }, [])).toThrow(/at least one secret/);
    expect(() => signPayload({ id: 'evt_1', timestamp: now(), body }, ['whsec_not base64!'])).toThrow(/base64/);
    expect(() => signPayload({ id: 'evt_1', timestamp: Date.now(), body }, [newSigningSecret()])).toThrow(/Unix seconds/);
    expect(() => signPayload({ id: 'evt_1', timestamp: 1.5, body }, [newSigningSecret()])).toThrow(/Unix seconds/);
  });
});

describe('newSigningSecret', () => {
  it('is whsec_ and 32 random bytes in base64, different every time', () => {
    const secrets = new Set(Array.from({ length: 50 }, newSigningSecret));
    expect(secrets.size).toBe(50);
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(signingKey(secret)).toHaveLength(32);
    }
  });
});
