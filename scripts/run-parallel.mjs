// `npm test`: runs the given npm scripts at once (the type-check, the lint and the OpenAPI linters,
// each a single-threaded process, side by side on two cores instead of one
// after the other), prints each one's output when it ends, and fails if any
// failed.
//
//   node scripts/run-parallel.mjs typecheck lint
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import process from 'node:process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(script) {
  return new Promise((resolve) => {
    const child = spawn(npm, ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'], shell: process.platform === 'win32' });
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('error', (error) => resolve({ script, code: 1, output: Buffer.from(`${error.message}\n`) }));
    child.on('close', (code) => resolve({ script, code: code ?? 1, output: Buffer.concat(output) }));
  });
}

const scripts = process.argv.slice(2);
let failed = false;
await Promise.all(
  scripts.map(async (script) => {
    const { code, output } = await run(script);
    process.stdout.write(`> npm run ${script}: ${code === 0 ? 'ok' : `failed (exit ${code})`}\n`);
    process.stdout.write(output);
    if (code !== 0) failed = true;
  }),
);
process.exitCode = failed ? 1 : 0;
