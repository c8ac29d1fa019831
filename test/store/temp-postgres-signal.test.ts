import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { signalServer } from '../helpers/temp-postgres.js';

// The freeze tests SIGSTOP a throwaway PostgreSQL and its children; a backend may exit between the listing and the signal.
describe("signalling a test PostgreSQL's processes", () => {
  it('signals the postmaster and the children still there, and skips a child that exited meanwhile (no ESRCH)', async () => {
    const postmaster = spawn('sleep', ['30']);
    const exited = spawn('true');
    await once(exited, 'exit');
    try {
      expect(() => signalServer(postmaster.pid ?? 0, [exited.pid ?? 0], 'SIGSTOP')).not.toThrow();
      signalServer(postmaster.pid ?? 0, [], 'SIGCONT');
    } finally {
      postmaster.kill('SIGKILL');
    }
  });
});
