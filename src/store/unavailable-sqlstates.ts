/**
 * The one place that decides which PostgreSQL errors mean "the database
 * cannot serve right now" (answer 503 with Retry-After, the client retries)
 * rather than "this query is wrong" (a bug: 500). Decided by SQLSTATE, never
 * by message text, which changes with the server's version and locale.
 *
 * - class 08: connection exception (the connection broke or never opened);
 * - class 53: insufficient resources — 53000, 53100 disk full, 53200 out of
 *   memory, 53300 too many connections, 53400 configuration limit exceeded;
 * - 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now
 *   (starting up or in recovery), 57P04 database dropped, 57P05 idle session
 *   timeout: the server ended or refused the session;
 * - 57014 query canceled: statement_timeout fired, the database did not
 *   answer in time;
 * - 25006 read-only SQL transaction: a write reached a standby (the primary
 *   was just demoted); another node, or this one later, can take it.
 */
const UNAVAILABLE_CLASSES = new Set(['08', '53']);
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '57P04', '57P05', '57014', '25006']);

export function isUnavailableSqlstate(code: string | undefined): boolean {
  if (code === undefined || code.length !== 5) return false;
  return UNAVAILABLE_CLASSES.has(code.slice(0, 2)) || UNAVAILABLE_CODES.has(code);
}
