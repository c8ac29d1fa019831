// `npm run build`, and `prepack` (so `npm pack` builds): compiles src/ to
// dist/esm/ (ES modules) and dist/cjs/ (CommonJS), each with .d.ts types and
// source maps. The repository's own build (`npm ci` at its root) runs this
// with --if-stale. Not `prepare`: an install from the tarball would have npm
// ask about a script it never needs to run.
//
//   node scripts/build.mjs              build
//   node scripts/build.mjs --if-stale   build only when dist/ is older than src/ or this configuration
//
// Both are written to a scratch directory beside dist/ and renamed into place:
// beside it, so the maps' relative paths to src/ stay right after the rename,
// and renamed, so a reader never sees half a build.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { parseArgs, promisify } from 'node:util';

const run = promisify(execFile);
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const outDir = path.join(PACKAGE, 'dist');
const STAMP = path.join(outDir, 'build.json');
const INPUTS = ['src', 'package.json', 'tsconfig.json', 'tsconfig.cjs.json', 'scripts/build.mjs'];
const { values } = parseArgs({ options: { 'if-stale': { type: 'boolean' } } });

if (values['if-stale'] && isBuildCurrent()) process.exit(0);

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  // Installed from its tarball the package ships dist/ already.
  process.stderr.write('lending-api-client build: skipped (typescript is not installed)\n');
  process.exit(0);
}

const startedAt = Date.now();
const scratch = path.join(PACKAGE, `dist-building-${process.pid}`);
rmSync(scratch, { recursive: true, force: true });
try {
  const compile = (project, out) =>
    run(process.execPath, [tsc, '-p', project, '--outDir', path.join(scratch, out)], { cwd: PACKAGE }).catch((error) => {
      throw new Error(`tsc -p ${project} failed:\n${error.stdout}${error.stderr}`);
    });
  await Promise.all([compile('tsconfig.json', 'esm'), compile('tsconfig.cjs.json', 'cjs')]);
  // The package is "type": "module"; this marks the CommonJS copy as such.
  writeFileSync(path.join(scratch, 'cjs', 'package.json'), '{ "type": "commonjs" }\n');
  writeFileSync(path.join(scratch, 'build.json'), `${JSON.stringify({ startedAt })}\n`);

  const previous = `${scratch}-previous`;
  if (existsSync(outDir)) renameSync(outDir, previous);
  renameSync(scratch, outDir);
  rmSync(previous, { recursive: true, force: true });
} catch (error) {
  rmSync(scratch, { recursive: true, force: true });
  process.stderr.write(`lending-api-client build: ${error.message}\n`);
  process.exit(1);
}

/** Whether dist/ holds a build that started after the last change to its inputs. */
function isBuildCurrent() {
  let startedAt;
  try {
    startedAt = JSON.parse(readFileSync(STAMP, 'utf8')).startedAt;
  } catch {
    return false;
  }
  let newest = 0;
  const visit = (file) => {
    const stat = statSync(file, { throwIfNoEntry: false });
    if (!stat) return;
    // A directory's mtime moves when a file in it is added, removed or renamed.
    newest = Math.max(newest, stat.mtimeMs);
    if (stat.isDirectory()) for (const name of readdirSync(file)) visit(path.join(file, name));
  };
  for (const input of INPUTS) visit(path.join(PACKAGE, input));
  return typeof startedAt === 'number' && newest < startedAt;
}
