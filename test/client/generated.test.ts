import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';
import { renderClientModules } from '../../scripts/client-types.js';

describe("the SDK's generated modules (packages/client/src/generated*.ts)", () => {
  it('are exactly what `npm run openapi` generates from the document', async () => {
    const modules = await renderClientModules(lendingApiDocument());
    expect(Object.keys(modules).sort()).toEqual(['generated-collections.ts', 'generated.ts']);
    for (const [name, expected] of Object.entries(modules)) {
      const committed = await readFile(new URL(`../../packages/client/src/${name}`, import.meta.url), 'utf8');
      expect(committed, `packages/client/src/${name} is stale: run \`npm run openapi\` and commit the result`).toBe(expected);
    }
  });

  it('keep the types free of imports, so the transport uses them without importing the classes built on it', async () => {
    const types = await readFile(new URL('../../packages/client/src/generated.ts', import.meta.url), 'utf8');
    expect(types).not.toMatch(/^import /m);
  });
});
