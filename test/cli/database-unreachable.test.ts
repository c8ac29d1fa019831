import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

const CLI_TIMEOUT = 600_000;

/** A loopback port nothing listens on: taken from the OS, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the CLI when PostgreSQL is unreachable', { timeout: CLI_TIMEOUT }, () => {
  it('names the host, port, database and user it tried, never the password', async () => {
    const port = await closedPort();
    const url = `postgres://lender:s3cret-pw@127.0.0.1:${port}/lending`;
    for (const command of [['org', 'list'], ['serve', '--port', '0']]) {
      const result = await runCli(command, url);
      expect(result.code, command.join(' ')).toBe(1);
      // `serve` once said "the database schema is behind (13 migrations pending)" here: the failed query read as an empty database.
      expect(result.stderr, command.join(' ')).toBe(`lending-api: the database at 127.0.0.1:${port}/lending as lender is unreachable (ECONNREFUSED)\n`);
    }
  });
});
