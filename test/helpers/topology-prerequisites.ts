import { existsSync } from 'node:fs';
import path from 'node:path';
import { POSTGRES_BIN_DIRS } from './temp-postgres.js';

export const PGBOUNCER_BIN = '/usr/sbin/pgbouncer';

/** A program the topology tests start themselves, and the Debian/Ubuntu package that installs it. */
export interface Program {
  readonly name: string;
  readonly where: string;
  readonly found: boolean;
  readonly debianPackage: string;
}

/** The PostgreSQL server binaries the topology is made with, in the first of `binDirs` that has them all. */
export function postgresProgram(binDirs: readonly string[] = POSTGRES_BIN_DIRS): Program {
  const found = binDirs.some((dir) => ['initdb', 'pg_ctl', 'pg_basebackup'].every((binary) => existsSync(path.join(dir, binary))));
  return { name: 'the PostgreSQL server (initdb, pg_ctl, pg_basebackup)', where: `one of ${binDirs.join(', ')}`, found, debianPackage: 'postgresql' };
}

export function pgbouncerProgram(binary = PGBOUNCER_BIN): Program {
  return { name: 'PgBouncer', where: binary, found: existsSync(binary), debianPackage: 'pgbouncer' };
}

/** What the topology tests need that is not installed. */
export function missingTopologyPrograms(): Program[] {
  return [postgresProgram(), pgbouncerProgram()].filter((program) => !program.found);
}

/** Names each missing program, where it was looked for, and the command that installs them all. */
export function missingProgramsMessage(missing: readonly Program[]): string {
  return [
    'the topology tests start their own PostgreSQL servers and PgBouncers, and this machine lacks:',
    ...missing.map((program) => `  - ${program.name}: not found in ${program.where}`),
    `install with: sudo apt-get install -y ${missing.map((program) => program.debianPackage).join(' ')}   (Debian/Ubuntu; other systems: docs/development.md)`,
  ].join('\n');
}

/** vitest.topology.config.ts's global setup: stops the run at once, with the above, instead of a test failing on a refused connection. */
export default function checkTopologyPrerequisites(): void {
  const missing = missingTopologyPrograms();
  if (missing.length > 0) throw new Error(missingProgramsMessage(missing));
}
