/**
 * The process entry of the CLI: runs `main` on the command line and sets the
 * exit code. `bin/lending-api` loads it from the TypeScript sources through
 * tsx; `npm run build` compiles it to `dist/cli/run.js` for production
 * services (no loader: about half the memory).
 */
import { main } from './main.js';

try {
  const code = await main(process.argv.slice(2));
  if (code !== 0) process.exitCode = code;
} catch (error) {
  process.stderr.write(`lending-api: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
