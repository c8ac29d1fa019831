/**
 * The list-parameter table of docs/api.md, rendered from the resource definitions so it cannot fall
 * behind them (a collection's filters and orderings appear there the moment it is added).
 * `npm run docs:api` rewrites the block between the markers; test/docs/api-tables.test.ts fails while it is stale.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { collectionPathOf, type ResourceDefinition } from '../src/listing/resource-definition.js';
import { RESOURCES } from '../src/resources/index.js';

export const API_DOC = new URL('../docs/api.md', import.meta.url);
export const BEGIN = '<!-- list parameters: generated from src/resources/ by `npm run docs:api` -->';
export const END = '<!-- end of generated list parameters -->';

/** Engine-level parameters every list takes, after the collection's own filters. */
const PAGING: readonly (readonly [string, string])[] = [
  ['order_by', 'one of the fields below, `-` prefix for descending'],
  ['page', 'integer ≥ 1, default 1'],
  ['cursor', 'keyset page: empty to start, then the value from a `next`/`previous` link; not with `page` ([cursor pages](#cursor-pages-walking-a-list-that-changes))'],
];

const code = (text: string) => '`' + text + '`';

export function renderListParameters(resources: readonly ResourceDefinition[] = RESOURCES): string {
  const collections = resources.filter((resource) => !resource.parent);
  const nested = resources.filter((resource) => resource.parent);
  const descriptions = new Map<string, string>();
  for (const resource of collections) for (const filter of resource.filters) if (!descriptions.has(filter.param)) descriptions.set(filter.param, filter.description);
  const header = ['name', ...collections.map((resource) => resource.path), 'meaning'];
  const row = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const lines = [row(header), row(header.map(() => '---'))];
  for (const [param, description] of descriptions) {
    const marks = collections.map((resource) => (resource.filters.some((filter) => filter.param === param) ? '✓' : '—'));
    lines.push(row([code(param), ...marks, description]));
  }
  for (const [param, description] of PAGING) lines.push(row([code(param), ...collections.map(() => '✓'), description]));
  lines.push('');
  const orderings = collections.map((resource) => `${resource.path}: ${resource.orderings.map(code).join(', ')}`);
  lines.push(`\`order_by\` fields — ${orderings.join('; ')}. Default ${[...new Set(collections.map((resource) => code(resource.defaultOrdering)))].join(', ')}.`);
  for (const resource of nested) {
    const params = [...resource.filters.filter((filter) => !filter.column).map((filter) => filter.param), ...PAGING.map(([param]) => param)];
    lines.push('');
    lines.push(
      `${code(`/api/${collectionPathOf(resource)}/`)} takes ${params.map(code).join(', ')}; \`order_by\`: ${resource.orderings.map(code).join(', ')} (default ${code(resource.defaultOrdering)}).`,
    );
  }
  return lines.join('\n');
}

/** docs/api.md with its generated block replaced by `block`. */
export function withListParameters(markdown: string, block: string): string {
  const start = markdown.indexOf(BEGIN);
  const end = markdown.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/api.md lacks the markers ${BEGIN} … ${END}`);
  return `${markdown.slice(0, start + BEGIN.length)}\n${block}\n${markdown.slice(end)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const markdown = await readFile(API_DOC, 'utf8');
  await writeFile(API_DOC, withListParameters(markdown, renderListParameters()));
  console.log('wrote the list-parameter table of docs/api.md');
}
