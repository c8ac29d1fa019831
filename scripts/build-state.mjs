// Whether dist/ was built from the sources as they are now. Read by
// bin/lending-api (in a checkout) and by `node scripts/build.mjs --if-stale`.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export const BUILD_STAMP = 'build.json';

/** Files whose change makes dist/ stale, besides everything under src/ and portal/ (dist/portal-app/). */
const BUILD_INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs', 'vite.config.ts'];
const BUILD_DIRECTORIES = ['src', 'portal'];

/**
 * True when dist/ holds a finished build that started after the last change
 * to src/ and the build configuration. A build records when it started, so an
 * edit made while it ran counts as newer.
 */
export function isBuildCurrent(root) {
  let startedAt;
  try {
    startedAt = JSON.parse(readFileSync(path.join(root, 'dist', BUILD_STAMP), 'utf8')).startedAt;
  } catch {
    return false;
  }
  if (typeof startedAt !== 'number') return false;
  return newestChange(root) < startedAt;
}

function newestChange(root) {
  let newest = 0;
  for (const file of BUILD_INPUTS) newest = Math.max(newest, mtimeOf(path.join(root, file)));
  const walk = (dir) => {
    // A directory's mtime moves when a file in it is added, removed or renamed.
    newest = Math.max(newest, mtimeOf(dir));
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else newest = Math.max(newest, mtimeOf(full));
    }
  };
  for (const dir of BUILD_DIRECTORIES) if (mtimeOf(path.join(root, dir)) > 0) walk(path.join(root, dir));
  return newest;
}

function mtimeOf(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}
