/**
 * The endpoint and list-parameter tables of docs/api.md, rendered from the OpenAPI document and the
 * resource definitions so they cannot fall behind them (a collection's routes, filters and orderings
 * appear there the moment it is added). `npm run docs:api` rewrites the blocks between the markers;
 * test/docs/api-tables.test.ts fails while they are stale.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { collectionPathOf, type ResourceDefinition } from '../src/listing/resource-definition.js';
import { lendingApiDocument } from '../src/openapi/lending-api-document.js';
import { RESOURCES } from '../src/resources/index.js';

export const API_DOC = new URL('../docs/api.md', import.meta.url);

export interface GeneratedBlock {
  readonly begin: string;
  readonly end: string;
  render(): string;
}

/** Where an operation's tag is explained further down docs/api.md. */
const SECTION_OF_TAG: Readonly<Record<string, string>> = {
  Ledger: '[writes](#writes)',
  'Ledger entries': '[entries](#ledger-entries)',
  Loans: '[loans](#loans)',
  Health: '[operations](operations.md)',
  'Webhook endpoints': '[webhook endpoints](#webhook-endpoints)',
};

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

type Operation = { summary?: string; security?: unknown[]; tags?: string[]; 'x-required-scope'?: string };

/** Every operation of the OpenAPI document (a path's 405s are not operations), with what it does and its credentials. */
export function renderEndpoints(document = lendingApiDocument() as { paths: Record<string, Record<string, Operation>> }): string {
  const lines = ['| method & path | what | auth |', '| --- | --- | --- |'];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const summary = operation.summary ?? '';
      const section = (operation.tags ?? []).map((tag) => SECTION_OF_TAG[tag]).find(Boolean);
      const what = `${summary.charAt(0).toLowerCase()}${summary.slice(1)}${section ? ` (${section})` : ''}`;
      const scope = operation['x-required-scope'] ?? (method === 'get' ? undefined : 'write');
      const auth = operation.security?.length === 0 ? 'none' : scope ? `Basic, ${scope} scope` : 'Basic';
      lines.push(`| \`${method.toUpperCase()} ${path}\` | ${what} | ${auth} |`);
    }
  }
  return lines.join('\n');
}

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

export const GENERATED_BLOCKS: readonly GeneratedBlock[] = [
  { begin: '<!-- endpoints: generated from the OpenAPI document by `npm run docs:api` -->', end: '<!-- end of generated endpoints -->', render: () => renderEndpoints() },
  {
    begin: '<!-- list parameters: generated from src/resources/ by `npm run docs:api` -->',
    end: '<!-- end of generated list parameters -->',
    render: () => renderListParameters(),
  },
];

/** docs/api.md with every generated block rendered afresh. */
export function withGeneratedBlocks(markdown: string): string {
  let text = markdown;
  for (const { begin, end, render } of GENERATED_BLOCKS) {
    const from = text.indexOf(begin);
    const to = text.indexOf(end);
    if (from < 0 || to < from) throw new Error(`docs/api.md lacks the markers ${begin} … ${end}`);
    text = `${text.slice(0, from + begin.length)}\n${render()}\n${text.slice(to)}`;
  }
  return text;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await writeFile(API_DOC, withGeneratedBlocks(await readFile(API_DOC, 'utf8')));
  console.log('wrote the endpoint and list-parameter tables of docs/api.md');
}
