import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { API_DOC, renderListParameters, withListParameters } from '../../scripts/api-doc-tables.js';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** `GET /api/…` of every operation the service really serves: one with a success answer (a path's 405s are not). */
function servedOperations(): string[] {
  const document = lendingApiDocument() as { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> };
  const operations: string[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const statuses = Object.keys(item[method]?.responses ?? {});
      if (statuses.some((status) => status.startsWith('2'))) operations.push(`${method.toUpperCase()} ${path}`);
    }
  }
  return operations.sort();
}

describe('docs/api.md', () => {
  it('lists every list parameter and ordering the resource definitions accept (npm run docs:api rewrites the table)', async () => {
    const markdown = await readFile(API_DOC, 'utf8');
    expect(markdown, 'docs/api.md is stale: run npm run docs:api').toBe(withListParameters(markdown, renderListParameters()));
  });

  it("has a row in its endpoint table for every operation of the OpenAPI document, and none for an operation it lacks", async () => {
    const markdown = await readFile(API_DOC, 'utf8');
    const table = markdown.split('## Endpoints')[1]!.split('\n## ')[0]!;
    const rows = [...table.matchAll(/^\| `(GET|POST|PUT|PATCH|DELETE) (\/[^`]*)` \|/gm)].map((match) => `${match[1]} ${match[2]}`);
    expect(rows.sort()).toEqual(servedOperations());
  });
});
