// `npm run lint:openapi` (part of `npm test`): Spectral (.spectral.mjs: spectral:oas and the OWASP
// API Security rate-limit rules), Redocly (redocly.yaml: its recommended rules) and the stock OWASP
// API Security ruleset (.spectral-owasp.mjs) on openapi.json, or on the document named as the argument.
// Fails on any error, and on any error of the stock OWASP ruleset but those ACCEPTED_OWASP_ERRORS
// lists; warnings are printed. Neither tool may reach the network: Redocly's telemetry and update
// check are turned off.
import { spawn } from 'node:child_process';
import process from 'node:process';
import { URL } from 'node:url';

const DOCUMENT = process.argv[2] ?? 'openapi.json';
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

/**
 * The stock OWASP ruleset's errors the document keeps, by rule, where (a pattern of the finding's path)
 * and why; docs/sdk.md lists them for users. Any other error fails.
 */
const ACCEPTED_OWASP_ERRORS = [
  { rule: 'owasp:api2:2023-no-http-basic', at: /^components\.securitySchemes\.basicAuth\.scheme$/, why: 'the product authenticates with HTTP Basic (organization ID and API key)' },
  { rule: 'owasp:api2:2023-write-restricted', at: /^paths\.\/api\/portal_sessions\/exchange\/\.post\.security$/, why: 'the exchange takes no credentials: the one-time token in its body is one (docs/portal.md)' },
];

function unacceptedOwaspErrors(output) {
  const results = JSON.parse(output.slice(output.indexOf('[')) || '[]');
  const errors = results.filter((result) => result.severity === 0);
  const unaccepted = errors.filter((result) => !ACCEPTED_OWASP_ERRORS.some(({ rule, at }) => rule === result.code && at.test(result.path.join('.'))));
  const byRule = (severity) => {
    const counts = {};
    for (const result of results.filter((candidate) => candidate.severity === severity)) counts[result.code] = (counts[result.code] ?? 0) + 1;
    return Object.entries(counts).map(([rule, count]) => `  ${count} × ${rule}`).join('\n');
  };
  const summary = `errors, each accepted (ACCEPTED_OWASP_ERRORS) unless listed above:\n${byRule(0)}\nwarnings:\n${byRule(1)}`;
  const listed = unaccepted.map((result) => `  error ${result.code} ${result.path.join('.')}: ${result.message}`).join('\n');
  return { failed: unaccepted.length > 0, shown: unaccepted.length > 0 ? `${listed}\n${summary}` : summary };
}

const linters = [
  { name: 'spectral', args: ['lint', DOCUMENT, '--ruleset', '.spectral.mjs', '--fail-severity', 'error'] },
  { name: 'redocly', args: ['lint', DOCUMENT, '--config', 'redocly.yaml', '--format', 'summary'] },
  { name: 'spectral', label: 'owasp (stock ruleset)', args: ['lint', DOCUMENT, '--ruleset', '.spectral-owasp.mjs', '--format', 'json', '--quiet'], judge: unacceptedOwaspErrors },
];

function run({ name, label = name, args, judge }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [new URL(`../node_modules/.bin/${name}`, import.meta.url).pathname, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ name: label, code: 1, output: `${error.message}\n` }));
    child.on('close', (code) => {
      if (!judge) return resolve({ name: label, code: code ?? 1, output });
      try {
        const { failed, shown } = judge(output);
        resolve({ name: label, code: failed ? 1 : 0, output: shown });
      } catch (error) {
        resolve({ name: label, code: 1, output: `${String(error)}\n${output}` });
      }
    });
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
