/**
 * The process entry of the CLI: runs `main` on the command line and sets the
 * exit code. `npm ci` compiles it to `dist/cli/run.js`, which
 * `bin/lending-api` runs; when src/ changed since that build, the bin loads
 * this file through tsx instead.
 */
import { main } from './main.js';

try {
  const code = await main(process.argv.slice(2));
  if (code !== 0) process.exitCode = code;
} catch (error) {
  process.stderr.write(`lending-api: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
