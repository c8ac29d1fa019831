import { describe, expect, it } from 'vitest';
import { startPgBouncer } from '../helpers/topology.js';
import { missingProgramsMessage, pgbouncerProgram, postgresProgram } from '../helpers/topology-prerequisites.js';

// `npm run test:topology` on a machine without PgBouncer failed with "pgbouncer did not start: ECONNREFUSED".
describe('the topology tests on a machine that lacks a program they start', () => {
  it('startPgBouncer says PgBouncer is missing, where it looked, and how to install it', async () => {
    await expect(startPgBouncer({ port: 5432 }, 'transaction', '/nonexistent/sbin/pgbouncer')).rejects.toThrow(
      /PgBouncer: not found in \/nonexistent\/sbin\/pgbouncer\ninstall with: sudo apt-get install -y pgbouncer/,
    );
  });

  it('the suite’s global setup names every missing program in one message with one install command', () => {
    const missing = [postgresProgram(['/nonexistent/postgresql/bin']), pgbouncerProgram('/nonexistent/pgbouncer')];
    expect(missing.map((program) => program.found)).toEqual([false, false]);
    expect(missingProgramsMessage(missing)).toBe(
      [
        'the topology tests start their own PostgreSQL servers and PgBouncers, and this machine lacks:',
        '  - the PostgreSQL server (initdb, pg_ctl, pg_basebackup): not found in one of /nonexistent/postgresql/bin',
        '  - PgBouncer: not found in /nonexistent/pgbouncer',
        'install with: sudo apt-get install -y postgresql pgbouncer   (Debian/Ubuntu; other systems: docs/development.md)',
      ].join('\n'),
    );
  });
});
