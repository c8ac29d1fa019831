/**
 * The primary's cost of remote_apply per drawdown-shaped commit, with pgbench
 * (no Node client in the way): one client, the ledger's two writes per
 * transaction, with `SET LOCAL synchronous_commit = remote_apply` against the
 * synchronous standby, and the same with `local`.
 *   node --import tsx test/topology/measure-remote-apply.ts
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { postgresBinDir } from '../helpers/temp-postgres.js';
import { createReplicationTopology } from '../helpers/topology.js';

const run = promisify(execFile);
const binDir = postgresBinDir() ?? '';
const topology = await createReplicationTopology(binDir);
try {
  await topology.primary.sql(`CREATE TABLE limits (id int PRIMARY KEY, outstanding numeric NOT NULL);
    CREATE TABLE entries (id bigserial PRIMARY KEY, limit_id int, amount numeric, at timestamptz DEFAULT now());
    INSERT INTO limits VALUES (1, 0)`);
  for (const mode of ['remote_apply', 'local', 'remote_apply', 'local']) {
    const script = path.join(tmpdir(), `draw-${mode}.sql`);
    await writeFile(
      script,
      `BEGIN;\nSET LOCAL synchronous_commit = ${mode};\nUPDATE limits SET outstanding = outstanding + 1 WHERE id = 1;\nINSERT INTO entries (limit_id, amount) VALUES (1, 1);\nCOMMIT;\n`,
    );
    const { stdout } = await run(path.join(binDir, 'pgbench'), ['-n', '-c', '1', '-T', '10', '-f', script, '-h', '127.0.0.1', '-p', String(topology.primary.port), '-U', 'postgres', 'postgres']);
    const tps = /tps = ([\d.]+)/.exec(stdout)?.[1];
    const latency = /latency average = ([\d.]+ ms)/.exec(stdout)?.[1];
    console.log(`synchronous_commit = ${mode}: ${tps} commits/s, latency ${latency}`);
  }
} finally {
  await topology.destroy();
}
