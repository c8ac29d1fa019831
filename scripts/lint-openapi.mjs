// `npm run lint:openapi` (part of `npm test`): Spectral (.spectral.mjs: spectral:oas and the OWASP
// API Security rate-limit rules) and Redocly (redocly.yaml: its recommended rules) on openapi.json.
// Fails on any error; warnings are printed. Neither tool may reach the network: Redocly's telemetry
// and update check are turned off.
import { spawn } from 'node:child_process';
import process from 'node:process';
import { URL } from 'node:url';

const DOCUMENT = 'openapi.json';
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

const linters = [
  { name: 'spectral', args: ['lint', DOCUMENT, '--ruleset', '.spectral.mjs', '--fail-severity', 'error'] },
  { name: 'redocly', args: ['lint', DOCUMENT, '--config', 'redocly.yaml', '--format', 'summary'] },
];

function run({ name, args }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [new URL(`../node_modules/.bin/${name}`, import.meta.url).pathname, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ name, code: 1, output: `${error.message}\n` }));
    child.on('close', (code) => resolve({ name, code: code ?? 1, output }));
  });
}

let failed = false;
for (const { name, code, output } of await Promise.all(linters.map(run))) {
  // Redocly's notice that its future releases need Node 22 is not about this document.
  const shown = output.replace(/[ \t]*[╔║╚].*\n/g, '').trim();
  process.stdout.write(`${name}: ${code === 0 ? 'ok' : `failed (exit ${code})`}\n${shown}\n`);
  if (code !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
