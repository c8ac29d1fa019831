import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/openapi/json-schema.js';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

interface SpectralResult {
  code: string;
  path: (string | number)[];
  severity: number;
}

/** Spectral with the project's ruleset on `document`: its errors (severity 0). */
async function spectralErrors(document: JsonObject): Promise<SpectralResult[]> {
  const directory = await mkdtemp(path.join(tmpdir(), 'spectral-'));
  try {
    const file = path.join(directory, 'openapi.json');
    await writeFile(file, JSON.stringify(document));
    const output = await run(process.execPath, [path.join(ROOT, 'node_modules/.bin/spectral'), 'lint', file, '--ruleset', path.join(ROOT, '.spectral.mjs'), '--format', 'json', '--quiet'], {
      cwd: ROOT,
    }).then(
      (done) => done.stdout,
      (failed: { stdout: string }) => failed.stdout,
    );
    return (JSON.parse(output || '[]') as SpectralResult[]).filter((result) => result.severity === 0);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/** `npm run lint:openapi` on `document`: its exit code and what it printed. */
async function lintOpenApi(document: JsonObject): Promise<{ code: number; output: string }> {
  const directory = await mkdtemp(path.join(tmpdir(), 'lint-openapi-'));
  try {
    const file = path.join(directory, 'openapi.json');
    await writeFile(file, JSON.stringify(document));
    return await run(process.execPath, [path.join(ROOT, 'scripts/lint-openapi.mjs'), file], { cwd: ROOT }).then(
      (done) => ({ code: 0, output: done.stdout }),
      (failed: { code: number; stdout: string }) => ({ code: failed.code, output: failed.stdout }),
    );
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

describe('npm run lint:openapi', () => {
  it('fails on an error of the stock OWASP ruleset it does not accept, and on an operation without a 2xx', async () => {
    const broken = structuredClone(lendingApiDocument());
    const paths = broken.paths as Record<string, Record<string, JsonObject>>;
    const list = paths['/api/methods/']!.get as { parameters: { name: string; schema: JsonObject }[] };
    delete list.parameters.find((parameter) => parameter.name === 'entity')!.schema.maxLength;
    paths['/api/methods/']!.delete = { operationId: 'deleteMethodsNotAllowed', responses: { 405: { $ref: '#/components/responses/MethodNotAllowed' } } };
    const { code, output } = await lintOpenApi(broken);
    expect(code).toBe(1);
    expect(output).toContain('error owasp:api4:2023-string-limit paths./api/methods/.get.parameters.4.schema');
    expect(output).toMatch(/operation-success-response/);
    expect(output).toMatch(/operation-2xx-response/);
  });
});

describe('the OpenAPI linters npm test runs (.spectral.mjs)', () => {
  // That openapi.json passes is `npm run lint:openapi`'s job; this is that the rules asked for are on.
  it('catch an API answer without rate-limit headers and an array without items', async () => {
    const broken = structuredClone(lendingApiDocument());
    const list = (broken.paths as Record<string, { get: { responses: Record<string, { headers: Record<string, unknown> }> } }>)['/api/methods/']!.get;
    for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) delete list.responses['200']!.headers[name];
    const schemas = (broken.components as { schemas: Record<string, { properties: Record<string, JsonObject> }> }).schemas;
    delete schemas.Problem!.properties.errors!.items;
    const errors = (await spectralErrors(broken)).map((result) => `${result.code} ${result.path.join('.')}`);
    expect(errors).toContain('owasp:api4:2023-rate-limit paths./api/methods/.get.responses.200.headers');
    expect(errors).toContain('array-items components.schemas.Problem.properties.errors');
  });
});
