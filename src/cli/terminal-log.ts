import { CONTROL_CHARACTERS } from '../domain/well-formed-text.js';
import type { DestinationStream } from 'pino';

/**
 * Where the server's log goes when a person watches it: at a terminal (and
 * without --json) each JSON log line is rewritten as one short human line —
 * `12:00:01  GET /api/methods/ 200  3.1 ms  org_demo` — so the demo's
 * banner is not buried in JSON. Anywhere else (a file, a pipe, a log
 * collector): undefined, and the server writes its JSON lines unchanged.
 */
export function terminalLogDestination(flags: { json?: boolean }, out: NodeJS.WriteStream = process.stdout): DestinationStream | undefined {
  if (!out.isTTY || flags.json) return undefined;
  return { write: (line: string) => void out.write(humanLogLine(line)) };
}

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** One pino JSON line as human text (the line unchanged if it is not JSON). */
export function humanLogLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return printable(line.replace(/\n$/, '')) + (line.endsWith('\n') ? '\n' : '');
  }
  return printable(humanText(entry)) + '\n';
}

/**
 * A log line's fields carry what clients sent (a path, a message quoting
 * one): JSON keeps their control characters escaped, a terminal would obey
 * them (clear the screen, retitle the window). Shown escaped instead.
 */
function printable(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function humanText(entry: Record<string, unknown>): string {
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 19) : '';
  const level = typeof entry.level === 'number' ? (LEVELS[entry.level] ?? String(entry.level)) : '';
  const error = entry.err as { message?: string } | undefined;
  if (entry.msg === 'request' && typeof entry.method === 'string') {
    const duration = typeof entry.duration_ms === 'number' ? `${entry.duration_ms.toFixed(1)} ms` : '';
    const org = typeof entry.org === 'string' ? entry.org : '-';
    const failure = error?.message ? `  ${error.message}` : '';
    return `${time}  ${String(entry.method)} ${String(entry.path)} ${String(entry.status)}  ${duration}  ${org}${failure}`;
  }
  return `${time}  ${level.padEnd(5)}  ${String(entry.msg ?? '')}${error?.message ? `: ${error.message}` : ''}`;
}
