import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import type { JsonObject } from '../../src/openapi/json-schema.js';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';
import { ResponseContract, type ObservedViolation } from '../helpers/response-contract.js';
import { spawnServer } from '../helpers/spawn-server.js';
import { unreachableStore } from '../helpers/unreachable-store.js';

/** The document without the 401 of `GET /api/methods/` and without the X-Frame-Options header. */
function documentMissingAnswers(): JsonObject {
  const document = structuredClone(lendingApiDocument());
  const paths = document.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
  delete paths['/api/methods/']!.get!.responses['401'];
  const headers = (document.components as { headers: Record<string, JsonObject> }).headers;
  headers['X-Frame-Options'] = { description: 'gone', required: false, schema: { const: 'SAMEORIGIN' } };
  return document;
}

describe('the response-contract hook every test runs under', () => {
  it('reports an undeclared status and a header whose value the document does not allow, through inject and over HTTP', async () => {
    const app = await buildApp({ store: unreachableStore() });
    const seen: ObservedViolation[] = [];
    new ResponseContract(documentMissingAnswers(), (violation) => seen.push(violation)).watch(app);
    try {
      await app.inject({ method: 'GET', url: '/api/methods/' });
      expect(seen).toEqual([expect.objectContaining({ request: 'GET /api/methods/ → 401', message: 'status 401 is not documented' })]);

      seen.length = 0;
      const url = await app.listen({ host: '127.0.0.1', port: 0 });
      const response = await fetch(`${url}/healthz`);
      expect(response.status).toBe(200);
      expect(seen).toEqual([expect.objectContaining({ request: 'GET /healthz → 200', message: expect.stringContaining('must be equal to constant') })]);
    } finally {
      await app.close();
    }
  });

  it('reports, from a server the tests spawn, the answers its document lacks', async () => {
    const directory = await mkdtemp(path.join(tmpdir(), 'contract-hook-'));
    const documentFile = path.join(directory, 'openapi.json');
    const violations = path.join(directory, 'violations.jsonl');
    await writeFile(documentFile, JSON.stringify(documentMissingAnswers()));
    await writeFile(violations, '');
    // Its own report file and document, so the suite's hook does not fail this test for what it provokes.
    const server = await spawnServer([], { DATABASE_URL: 'pglite://memory', CONTRACT_OPENAPI_FILE: documentFile, CONTRACT_VIOLATIONS_FILE: violations }, 180_000);
    try {
      const response = await fetch(`${server.url}/api/methods/`);
      expect(response.status).toBe(401);
      const reported = (await readFile(violations, 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as ObservedViolation);
      expect(reported).toEqual([expect.objectContaining({ request: 'GET /api/methods/ → 401', message: 'status 401 is not documented' })]);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
      await rm(directory, { recursive: true, force: true });
    }
  });
});
