import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { parseTrustProxy, type TrustProxy } from '../../src/domain/trust-proxy-setting.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createTenant, type Tenant } from '../helpers/tenants.js';

describe('parseTrustProxy (TRUST_PROXY)', () => {
  it.each([
    ['false', false],
    ['0', false],
    ['true', 1],
    ['1', 1],
    ['2', 2],
    ['10.0.0.0/8', ['10.0.0.0/8']],
    [' 10.0.0.2, 2001:db8::/32 ,loopback', ['10.0.0.2', '2001:db8::/32', 'loopback']],
  ])('reads %s', (raw, trust) => {
    expect(parseTrustProxy(raw)).toEqual({ trust });
  });

  it.each(['maybe', '10.0.0.0/33', '2001:db8::/129', '10.0.0.0/8/1', '999.0.0.1', '33', '-1', '10.0.0.1,'])('refuses %s', (raw) => {
    expect(parseTrustProxy(raw)).toHaveProperty('error');
  });
});

const MAX_FAILURES = 3;
// The proxy in front: inject's default peer address.
const PROXY = '127.0.0.1';
const forms: [string, TrustProxy | boolean][] = [
  ['a hop count (1)', 1],
  ['TRUST_PROXY=true (one hop)', true],
  ['the proxy\'s address range', ['127.0.0.0/8']],
];

describeEachStore('a client behind a proxy that appends to X-Forwarded-For', (store) => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(store());
  });

  for (const [name, trustProxy] of forms) {
    describe(`trusting ${name}`, () => {
      let app: FastifyInstance;
      beforeAll(async () => {
        app = await buildApp({ store: store(), trustProxy, rateLimit: { perMinute: 10_000, authFailuresPerMinute: MAX_FAILURES } });
      });
      afterAll(async () => {
        await app.close();
      });
      // What the proxy forwards: whatever the client sent, then the address it saw.
      const viaProxy = (clientAddress: string, spoofed: string[], authorization: string) =>
        app.inject({
          url: '/api/methods/',
          remoteAddress: PROXY,
          headers: { authorization, 'x-forwarded-for': [...spoofed, clientAddress].join(', ') },
        });

      let attackers = 0;
      it('gives a client prepending fake addresses no fresh failure budget, and lets it lock out no one else', async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.array(fc.ipV4().filter((ip) => !ip.startsWith('198.51.')), { minLength: 1, maxLength: 3 }), {
              minLength: MAX_FAILURES + 1,
              maxLength: MAX_FAILURES + 1,
            }),
            async (spoofedChains) => {
              attackers += 1;
              const attacker = `198.51.${Math.floor(attackers / 250)}.${attackers % 250}`;
              const wrong = basicAuthorization(tenant.org.uid, 'guess');
              for (const spoofed of spoofedChains.slice(0, MAX_FAILURES)) {
                expect((await viaProxy(attacker, spoofed, wrong)).statusCode).toBe(401);
              }
              // Blocked, whatever it claims to be this time, even with the right key.
              expect((await viaProxy(attacker, spoofedChains[MAX_FAILURES] ?? [], tenant.authorization)).statusCode).toBe(429);
              // The addresses it named were never charged.
              for (const victim of new Set(spoofedChains.flat())) {
                expect((await viaProxy(victim, [], tenant.authorization)).statusCode).toBe(200);
              }
            },
          ),
          { numRuns: 15 },
        );
      });
    });
  }

  describe('trusting only the proxy\'s addresses', () => {
    it('counts a client that connects directly by its own address, whatever X-Forwarded-For it sends', async () => {
      const app = await buildApp({ store: store(), trustProxy: ['10.0.0.0/8'], rateLimit: { perMinute: 10_000, authFailuresPerMinute: MAX_FAILURES } });
      try {
        const wrong = basicAuthorization(tenant.org.uid, 'guess');
        for (let i = 0; i < MAX_FAILURES; i += 1) {
          const response = await app.inject({ url: '/api/methods/', remoteAddress: '198.51.100.200', headers: { authorization: wrong, 'x-forwarded-for': `203.0.113.${i}` } });
          expect(response.statusCode).toBe(401);
        }
        const direct = await app.inject({ url: '/api/methods/', remoteAddress: '198.51.100.200', headers: { authorization: tenant.authorization, 'x-forwarded-for': '203.0.113.99' } });
        expect(direct.statusCode).toBe(429);
        for (let i = 0; i < MAX_FAILURES; i += 1) {
          const victim = await app.inject({ url: '/api/methods/', remoteAddress: '10.0.0.5', headers: { authorization: tenant.authorization, 'x-forwarded-for': `203.0.113.${i}` } });
          expect(victim.statusCode).toBe(200);
        }
      } finally {
        await app.close();
      }
    });
  });
});
