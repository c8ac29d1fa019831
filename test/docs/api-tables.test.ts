import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { API_DOC, renderEndpoints, withGeneratedBlocks } from '../../scripts/api-doc-tables.js';

describe('docs/api.md', () => {
  it('lists every endpoint of the OpenAPI document and every list parameter and ordering of the resource definitions (npm run docs:api rewrites both tables)', async () => {
    const markdown = await readFile(API_DOC, 'utf8');
    expect(markdown, 'docs/api.md is stale: run npm run docs:api').toBe(withGeneratedBlocks(markdown));
  });

  it('gives each endpoint its credentials: none for the probes and the reference, a write-scoped key for a POST', () => {
    const rows = renderEndpoints().split('\n');
    expect(rows).toContainEqual(expect.stringMatching(/^\| `GET \/healthz` \| .* \| none \|$/));
    expect(rows).toContainEqual(expect.stringMatching(/^\| `POST \/api\/loans\/` \| .* \| Basic, write scope \|$/));
    expect(rows).toContainEqual(expect.stringMatching(/^\| `GET \/api\/methods\/` \| .* \| Basic \|$/));
  });
});
