import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { createLogger } from '../../src/logger.js';
import { logBuffer } from '../helpers/log-buffer.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createTenant } from '../helpers/tenants.js';
import { unreachableStore } from '../helpers/unreachable-store.js';

/** Every %XX escape decoded, repeatedly (double encoding), as a reader of the log could. */
function decodedEscapes(text: string): string {
  let current = text;
  for (let round = 0; round < 4; round += 1) current = current.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return current;
}

const percentEncodeAll = (text: string) => [...text].map((char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`).join('');

/** Requests carrying `key` everywhere a client could put it. */
async function sendKeyEverywhere(app: FastifyInstance, orgUid: string, key: string): Promise<LightMyRequestResponse[]> {
  const underscoreEncoded = key.replace(/_/g, '%5F');
  const paths = [
    `/api/methods/${key}/`,
    `/api/methods/${underscoreEncoded}/`,
    `/api/methods/${key.replace('lak_', 'LAK%5f')}/`,
    `/api/methods/${percentEncodeAll(key)}/`,
    `/api/methods/${key.replace(/_/g, '%255F')}/`,
    `/api/${underscoreEncoded}/`,
    `/api/methods/${key}%ZZ/`,
    `/api/methods/${underscoreEncoded}%ZZ/`,
    `/api/limits/?key=${key}&page=${underscoreEncoded}`,
  ];
  const headerSets: Record<string, string>[] = [
    { 'x-request-id': key },
    { 'x-request-id': `trace-${key}` },
    { 'x-request-id': key.toUpperCase() },
    { 'x-request-id': key.slice('lak_'.length) },
    { 'x-request-id': `trace-${key.slice('lak_'.length)}` },
    { authorization: basicAuthorization(orgUid, key) },
    { authorization: `Bearer ${key}` },
    { 'user-agent': key, 'x-forwarded-for': key, cookie: `session=${key}` },
  ];
  const responses: LightMyRequestResponse[] = [];
  for (const url of paths) {
    responses.push(await app.inject({ url, headers: { authorization: basicAuthorization(orgUid, key), 'x-request-id': key } }));
  }
  for (const headers of headerSets) responses.push(await app.inject({ url: '/api/methods/', headers }));
  return responses;
}

describeEachStore('API keys never reach the log', (store) => {
  it('greps every log line, raw and percent-decoded, for every key the test created: none is there', async () => {
    const log = logBuffer();
    const logger = createLogger('trace', log.stream);
    const app = await buildApp({ store: store(), loggerInstance: logger, rateLimit: { perMinute: 1000, authFailuresPerMinute: 1000 } });
    const broken = unreachableStore();
    // Answers 5xx, so its lines carry the error and its message.
    const failing = await buildApp({ store: broken, loggerInstance: logger });
    const tenants = [await createTenant(store()), await createTenant(store())];
    const keys = tenants.flatMap((tenant) => [tenant.apiKey, `${tenant.apiKey.slice(0, -4)}AAAA`]);
    const responses: LightMyRequestResponse[] = [];
    try {
      for (const tenant of tenants) {
        for (const key of keys) {
          responses.push(...(await sendKeyEverywhere(app, tenant.org.uid, key)));
          responses.push(...(await sendKeyEverywhere(failing, tenant.org.uid, key)));
        }
      }
    } finally {
      await app.close();
      await failing.close();
      await broken.close();
    }

    expect(responses.some((response) => response.statusCode >= 500)).toBe(true);
    const text = log.text();
    // Requests Fastify rejects while routing (a bad escape) write no access line; all the others do.
    expect(text.split('\n').filter((line) => line.includes('"msg":"request"')).length).toBeGreaterThan(responses.length * 0.8);
    const secrets = keys.flatMap((key) => [key, key.slice('lak_0123456789abcdef_'.length)]);
    for (const secret of secrets) {
      expect(text).not.toContain(secret);
      expect(decodedEscapes(text)).not.toContain(secret);
      expect(text.toLowerCase()).not.toContain(secret.toLowerCase());
    }
    for (const response of responses) expect(String(response.headers['x-request-id'])).not.toMatch(/lak_/i);
  });

  it('refuses a key-shaped X-Request-Id and answers with a fresh id, but keeps a plain one', async () => {
    const app = await buildApp({ store: store() });
    try {
      const tenant = await createTenant(store());
      const withoutPrefix = tenant.apiKey.slice('lak_'.length);
      for (const given of [tenant.apiKey, `id-${tenant.apiKey}`, 'LAK_0123456789abcdef_x', 'lak_short', withoutPrefix, `id-${withoutPrefix}`, withoutPrefix.toUpperCase()]) {
        const response = await app.inject({ url: '/healthz', headers: { 'x-request-id': given } });
        expect(response.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      }
      const plain = await app.inject({ url: '/healthz', headers: { 'x-request-id': 'checkout-42.retry:1' } });
      expect(plain.headers['x-request-id']).toBe('checkout-42.retry:1');
    } finally {
      await app.close();
    }
  });
});
