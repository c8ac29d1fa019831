import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { humanLogLine, terminalLogDestination } from '../../src/cli/terminal-log.js';
import { createLogger } from '../../src/logger.js';
import { openPgliteTestStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

/** A stand-in for process.stdout that records what is written. */
function fakeStdout(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const out = { isTTY, text: '', write: (chunk: string) => ((out.text += chunk), true) };
  return out as unknown as NodeJS.WriteStream & { text: string };
}

describe('the server log at a terminal', () => {
  it('writes one human line per request instead of JSON when stdout is a terminal', async () => {
    const out = fakeStdout(true);
    const store = await openPgliteTestStore();
    const app = await buildApp({ store, loggerInstance: createLogger('info', terminalLogDestination({}, out)) });
    try {
      const tenant = await createTenant(store);
      await app.inject({ url: '/api/methods/?currency=usd', headers: { authorization: tenant.authorization } });
      await app.inject({ url: '/api/methods/' });
    } finally {
      await app.close();
      await store.close();
    }
    const lines = out.text.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d{2}:\d{2}:\d{2} {2}GET \/api\/methods\/ 200 {2}\d+\.\d ms {2}org_test_[0-9a-f]+$/);
    expect(lines[1]).toMatch(/^\d{2}:\d{2}:\d{2} {2}GET \/api\/methods\/ 401 {2}\d+\.\d ms {2}-/);
    expect(out.text).not.toContain('{');
  }, 600_000);

  it('never writes a control character a client sent: a path that clears the screen is shown escaped', async () => {
    const out = fakeStdout(true);
    const store = await openPgliteTestStore();
    const app = await buildApp({ store, loggerInstance: createLogger('info', terminalLogDestination({}, out)) });
    // Key-shaped, so the logger decodes the path to redact it: the escapes around it become ESC and BEL.
    const keyShaped = `lak_0000000000000000_${'a'.repeat(43)}`;
    try {
      await app.inject({ url: `/api/methods/${keyShaped}%1B%5D0%3Bpwned%07%1B%5B2J/` });
    } finally {
      await app.close();
      await store.close();
    }
    expect(out.text).toMatch(/ GET \/api\/methods\/\[redacted\]%1B\]0;pwned%07%1B\[2J\/ 401 /);
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    expect(out.text.trimEnd()).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(humanLogLine('{"level":30,"time":"2025-01-06T09:00:01.000Z","msg":"x\\u001b[2J","err":{"message":"\\u0007"}}')).toBe('09:00:01  info   x\\x1b[2J: \\x07\n');
  }, 600_000);

  it('keeps JSON lines when stdout is not a terminal, or with --json', () => {
    expect(terminalLogDestination({}, fakeStdout(false))).toBeUndefined();
    expect(terminalLogDestination({ json: true }, fakeStdout(true))).toBeUndefined();
  });

  it('writes other log lines with their level and message, and passes non-JSON text through', () => {
    expect(humanLogLine('{"level":40,"time":"2025-01-06T09:00:01.000Z","msg":"shutdown: requests still running"}\n')).toBe(
      '09:00:01  WARN   shutdown: requests still running\n',
    );
    expect(humanLogLine('{"level":50,"time":"2025-01-06T09:00:02.000Z","msg":"boom","err":{"message":"db gone"}}')).toBe('09:00:02  ERROR  boom: db gone\n');
    expect(humanLogLine('plain text\n')).toBe('plain text\n');
  });
});
