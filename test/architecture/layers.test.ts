import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every .ts file under `dir`, relative to the repository root. */
function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
    .map((name) => path.join(dir, name))
    .sort();
}

/** What `file` imports: static imports and re-exports, and `import('…')` with a literal. */
function specifiersOf(file: string): string[] {
  const source = readFileSync(path.join(ROOT, file), 'utf8');
  return [...source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g)].map((match) => match[1] ?? match[2] ?? '');
}

/** The project files `file` imports, as repository paths. */
function importsOf(file: string): string[] {
  return specifiersOf(file)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.join(path.dirname(file), specifier).replace(/\.js$/, '.ts'));
}

/** Import cycles among `files`: each strongly connected group of more than one file (Tarjan). */
function importCycles(files: string[]): string[][] {
  const edges = new Map(files.map((file) => [file, importsOf(file).filter((target) => files.includes(target))]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of edges.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) === index.get(file)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== file);
      if (group.length > 1 || edges.get(file)?.includes(file)) cycles.push(group.sort());
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return cycles;
}

/**
 * The layers of src/ as docs/architecture.md states them, bottom first: the
 * paragraph "Folders import only folders on their own level or below … From
 * the bottom: `a/`, `b.ts`; `c/`; …" (levels separated by semicolons).
 */
function documentedLayers(): Map<string, number> {
  const doc = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
  const paragraph = /Folders import only folders[^\n]*(?:\n(?!\n)[^\n]*)*/.exec(doc)?.[0] ?? '';
  const order = paragraph.split('From the bottom:')[1]?.split('.\n')[0]?.split(/\.\s/)[0] ?? '';
  const layers = new Map<string, number>();
  order.split(';').forEach((level, height) => {
    for (const [, name] of level.matchAll(/`([^`]+)`/g)) layers.set(name!, height);
  });
  return layers;
}

/** `src/http/problem.ts` → `http/`; `src/app.ts` → `app.ts`. */
function placeOf(file: string): string {
  const [first, second] = path.relative('src', file).split(path.sep);
  return second === undefined ? first! : `${first}/`;
}

describe('layers: imports point one way', () => {
  const files = sourceFiles('src');

  it('docs/architecture.md places every folder and top-level file of src/ on a level', () => {
    const layers = documentedLayers();
    expect(layers.size).toBeGreaterThan(5);
    const unplaced = [...new Set(files.map(placeOf))].filter((place) => !layers.has(place));
    expect(unplaced, 'add these to the "From the bottom" order in docs/architecture.md').toEqual([]);
  });

  it('no file of src/ imports one on a higher level than its own', () => {
    const layers = documentedLayers();
    const upward = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith(`src${path.sep}`) && layers.get(placeOf(target))! > layers.get(placeOf(file))!)
        .map((target) => `${file} → ${target}`),
    );
    expect(upward).toEqual([]);
  });

  it('the routes reach the list engine through its one entry point', () => {
    const listing = importsOf(path.join('src', 'http', 'resource-routes.ts')).filter((target) => placeOf(target) === 'listing/');
    expect(listing.sort()).toEqual([path.join('src', 'listing', 'list-engine.ts'), path.join('src', 'listing', 'resource-definition.ts')]);
  });

  it('src/ has no import cycle', () => {
    expect(importCycles(files)).toEqual([]);
  });

  it('the SDK (packages/client/src) imports only its own files, with no cycle', () => {
    const sdk = sourceFiles('packages/client/src');
    expect(sdk.length).toBeGreaterThan(5);
    const outside = sdk.flatMap((file) => importsOf(file).filter((target) => !sdk.includes(target)).map((target) => `${file} → ${target}`));
    expect(outside).toEqual([]);
    const packages = sdk.flatMap((file) => specifiersOf(file).filter((specifier) => !specifier.startsWith('.')).map((specifier) => `${file} → ${specifier}`));
    expect(packages, 'the SDK has no dependencies, not even node: built-ins').toEqual([]);
    expect(importCycles(sdk)).toEqual([]);
  });
});
