import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../helpers/app.js';
import { openPgliteTestStore } from '../../helpers/stores.js';
import type { Store } from '../../../src/store/store.js';

const INDEX = '<!doctype html><html><head><script type="module" src="/portal/assets/app-1a2b3c.js"></script></head><body></body></html>';
const SCRIPT = `export const portal = ${JSON.stringify('x'.repeat(2000))};`;

function bundleDirectory(): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'portal-bundle-'));
  mkdirSync(path.join(directory, 'assets'));
  writeFileSync(path.join(directory, 'index.html'), INDEX);
  writeFileSync(path.join(directory, 'assets', 'app-1a2b3c.js'), SCRIPT);
  writeFileSync(path.join(directory, 'assets', 'style-9f8e.css'), 'body{margin:0}');
  writeFileSync(path.join(directory, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(path.join(directory, '.secret'), 'not served');
  writeFileSync(path.join(path.dirname(directory), `${path.basename(directory)}-outside.txt`), 'OUTSIDE-THE-BUNDLE');
  return directory;
}

const CSP_NO_FRAMING =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

describe('the portal’s pages', () => {
  let store: Store;
  let directory: string;
  let app: FastifyInstance;
  let framed: FastifyInstance;
  let missing: FastifyInstance;
  beforeAll(async () => {
    store = await openPgliteTestStore();
    directory = bundleDirectory();
    app = await buildApp({ store, portal: { directory } });
    framed = await buildApp({ store, portal: { directory, frameAncestors: ['https://dashboard.example.com', 'https://admin.example.com:8443'] } });
    missing = await buildApp({ store, portal: { directory: path.join(directory, 'nowhere') } });
  });
  afterAll(async () => {
    await Promise.all([app.close(), framed.close(), missing.close()]);
    await store.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('answers index.html, never cached, for /portal/ and for every page path under it, query and all', async () => {
    for (const url of ['/portal/', '/portal/methods/', '/portal/limits/cl_1/?currency=USD', '/portal/webhooks/we_1/attempts/', '/portal/index.html']) {
      const response = await app.inject({ url });
      expect(response.statusCode, url).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toBe(INDEX);
    }
  });

  it('sends /portal to /portal/, keeping the query', async () => {
    const response = await app.inject({ url: '/portal?x=1' });
    expect(response.statusCode).toBe(301);
    expect(response.headers.location).toBe('/portal/?x=1');
  });

  it('answers assets as immutable with their content type, gzipped when asked', async () => {
    const script = await app.inject({ url: '/portal/assets/app-1a2b3c.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(script.body).toBe(SCRIPT);
    const gzipped = await app.inject({ url: '/portal/assets/app-1a2b3c.js', headers: { 'accept-encoding': 'gzip, br' } });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.rawPayload.length).toBeLessThan(SCRIPT.length);
    expect((await app.inject({ url: '/portal/assets/style-9f8e.css' })).headers['content-type']).toBe('text/css; charset=utf-8');
    expect((await app.inject({ url: '/portal/favicon.svg' })).headers['content-type']).toBe('image/svg+xml');
  });

  it('answers HEAD like GET without a body', async () => {
    const response = await app.inject({ method: 'HEAD', url: '/portal/assets/app-1a2b3c.js' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(response.body).toBe('');
  });

  it('answers 404 for an asset it does not have, and never a dot file or a directory listing', async () => {
    expect((await app.inject({ url: '/portal/assets/gone-000.js' })).statusCode).toBe(404);
    expect((await app.inject({ url: '/portal/assets/' })).statusCode).toBe(404);
    const dotFile = await app.inject({ url: '/portal/.secret' });
    expect(dotFile.body).not.toContain('not served');
  });

  it('refuses paths that climb out of the bundle, however encoded', async () => {
    const outside = `${path.basename(directory)}-outside.txt`;
    for (const url of [`/portal/../${outside}`, `/portal/%2e%2e/${outside}`, `/portal/assets/..%2f..%2f${outside}`, '/portal/..%5c..%5cetc%5cpasswd', '/portal/%2E%2E/%2E%2E/etc/passwd']) {
      const response = await app.inject({ url });
      expect([400, 404], url).toContain(response.statusCode);
      expect(response.body).not.toContain('OUTSIDE-THE-BUNDLE');
      expect(response.headers['content-type']).toContain('application/problem+json');
    }
  });

  it('carries the strict CSP, no-referrer, nosniff and DENY when no origin may frame it', async () => {
    for (const url of ['/portal/', '/portal/assets/app-1a2b3c.js', '/portal/assets/gone-000.js']) {
      const response = await app.inject({ url });
      expect(response.headers['content-security-policy'], url).toBe(CSP_NO_FRAMING);
      expect(response.headers['referrer-policy']).toBe('no-referrer');
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['x-frame-options']).toBe('DENY');
    }
  });

  it('carries them on refusals too: a 405, a traversal, a redirect', async () => {
    const refused = await app.inject({ method: 'POST', url: '/portal/', payload: '' });
    expect(refused.statusCode).toBe(405);
    expect(refused.headers.allow).toBe('GET, HEAD');
    for (const response of [refused, await app.inject({ url: '/portal/assets/..%2f..%2fx' }), await app.inject({ url: '/portal' })]) {
      expect(response.headers['content-security-policy']).toBe(CSP_NO_FRAMING);
      expect(response.headers['x-frame-options']).toBe('DENY');
    }
  });

  it('names the PORTAL_FRAME_ANCESTORS origins and drops X-Frame-Options when some may frame it', async () => {
    const response = await framed.inject({ url: '/portal/' });
    expect(response.headers['content-security-policy']).toContain('frame-ancestors https://dashboard.example.com https://admin.example.com:8443');
    expect(response.headers['x-frame-options']).toBeUndefined();
    const refused = await framed.inject({ method: 'DELETE', url: '/portal/limits/' });
    expect(refused.headers['content-security-policy']).toContain('frame-ancestors https://dashboard.example.com https://admin.example.com:8443');
    expect(refused.headers['x-frame-options']).toBeUndefined();
  });

  it('leaves the API’s own headers alone', async () => {
    for (const url of ['/healthz', '/api/methods/', '/portalx/']) {
      const api = await framed.inject({ url });
      expect(api.headers['content-security-policy'], url).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(api.headers['x-frame-options'], url).toBe('DENY');
    }
    const docs = await framed.inject({ url: '/docs' });
    expect(docs.headers['content-security-policy']).not.toContain('dashboard.example.com');
  });

  it('answers 503 saying to build when the bundle is missing', async () => {
    const response = await missing.inject({ url: '/portal/limits/' });
    expect(response.statusCode).toBe(503);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.json<{ detail: string }>().detail).toContain('npm run build');
    expect(response.headers['content-security-policy']).toBe(CSP_NO_FRAMING);
  });
});
