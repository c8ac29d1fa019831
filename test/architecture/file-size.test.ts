import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Small files with one concern each: past this a file holds more than one, and is split. */
const MAX_LINES = 350;
/** Written by a generator, not by hand. */
const GENERATED = new Set(['packages/client/src/generated.ts']);

function handWrittenSources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(ts|tsx|css)$/.test(name) && !name.endsWith('.d.ts'))
    .map((name) => path.join(dir, name))
    .filter((file) => !GENERATED.has(file));
}

it(`keeps every hand-written source file of src/, the SDK and the portal at ${MAX_LINES} lines or fewer`, () => {
  const portal = handWrittenSources('portal/src');
  expect(portal.filter((file) => file.endsWith('.tsx')).length).toBeGreaterThan(10);
  const files = [...handWrittenSources('src'), ...handWrittenSources('packages/client/src'), ...portal];
  expect(files.length).toBeGreaterThan(100);
  const over = files
    .map((file) => ({ file, lines: readFileSync(path.join(ROOT, file), 'utf8').split('\n').length }))
    .filter(({ lines }) => lines > MAX_LINES)
    .map(({ file, lines }) => `${file}: ${lines} lines`);
  expect(over).toEqual([]);
});
