// `npm run build`, and `prepare` (so `npm ci` builds): compiles src/ to dist/
// — the service and CLI (dist/cli/run.js, which bin/lending-api runs) — and
// copies the SQL migrations next to the compiled store; builds the portal
// (portal/, with Vite: vite.config.ts) into dist/portal-app/; and runs the SDK's
// own build (packages/client/scripts/build.mjs, a package of its own).
//
//   node scripts/build.mjs               build
//   node scripts/build.mjs --if-stale    build only when dist/ is older than src/ (npm test)
//   node scripts/build.mjs --out-dir D   build into D instead of dist/ (tests)
//
// The build is written to a scratch directory and renamed into place, so a
// process starting meanwhile sees the old build or none (bin/lending-api then
// runs the sources), never half of one. The scratch directory is a sibling of
// the output, so the source maps' relative paths to src/ hold after the rename.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { BUILD_STAMP, isBuildCurrent } from './build-state.mjs';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { 'if-stale': { type: 'boolean' }, 'out-dir': { type: 'string' } } });
const outDir = path.resolve(ROOT, values['out-dir'] ?? 'dist');

// The SDK builds beside the service (its dist/ is its own; --out-dir is the service's).
const clientBuild =
  outDir === path.join(ROOT, 'dist')
    ? run(process.execPath, ['packages/client/scripts/build.mjs', ...(values['if-stale'] ? ['--if-stale'] : [])], { cwd: ROOT }).catch((error) => {
        process.stderr.write(error.stderr);
        process.exit(1);
      })
    : Promise.resolve();

if (values['if-stale'] && outDir === path.join(ROOT, 'dist') && isBuildCurrent(ROOT)) {
  await clientBuild;
  process.exit(0);
}

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  // `npm ci --omit=dev` has no compiler; a package installed from its tarball
  // ships dist/ already.
  process.stderr.write('lending-api build: skipped (typescript is not installed; `npm ci` with dev dependencies builds dist/)\n');
  process.exit(0);
}

const startedAt = Date.now();
const scratch = path.join(path.dirname(outDir), `${path.basename(outDir)}-building-${process.pid}`);
rmSync(scratch, { recursive: true, force: true });
mkdirSync(scratch, { recursive: true });
try {
  const compile = (project, out) =>
    run(process.execPath, [tsc, '-p', project, '--outDir', path.join(scratch, out)], { cwd: ROOT }).catch((error) => {
      throw new Error(`tsc -p ${project} failed:\n${error.stdout}${error.stderr}`);
    });
  // The portal's bundle builds beside the compiler (Vite in this process, tsc in its own).
  await Promise.all([compile('tsconfig.build.json', '.'), buildPortal(path.join(scratch, 'portal-app'))]);
  cpSync(path.join(ROOT, 'src/store/migrations'), path.join(scratch, 'store/migrations'), { recursive: true });
  writeFileSync(path.join(scratch, BUILD_STAMP), `${JSON.stringify({ startedAt })}\n`);

  const previous = `${scratch}-previous`;
  if (existsSync(outDir)) renameSync(outDir, previous);
  renameSync(scratch, outDir);
  rmSync(previous, { recursive: true, force: true });
  await clientBuild;
} catch (error) {
  rmSync(scratch, { recursive: true, force: true });
  process.stderr.write(`lending-api build: ${error.message}\n`);
  process.exit(1);
}

/** The portal (SPEC §9): Vite bundles portal/ into `out` (index.html and assets/ with hashed names). */
async function buildPortal(out) {
  const { build } = await import('vite');
  try {
    await build({ configFile: path.join(ROOT, 'vite.config.ts'), logLevel: 'error', build: { outDir: out, emptyOutDir: true } });
  } catch (error) {
    throw new Error(`the portal's build (vite) failed:\n${error.message}`);
  }
}
