import { ApiError, type ParamError } from '../domain/errors.js';
import { formatMicros, MAX_TIMESTAMP_TEXT_LENGTH, parseTimestamp, type Bound } from '../domain/timestamp.js';
import type { ReplayWindow } from '../webhooks/endpoint-replay.js';
import { parseBodyObject, refuseUnknownMembers, typeName } from './write-body.js';

export const REPLAY_MEMBERS = ['since', 'until'] as const;

/**
 * `POST /api/webhook_endpoints/{id}/replay/`: `since` (required) and
 * `until` (optional: now), read as the lists read `created_from` and
 * `created_to` (µs precision, inclusive; a date alone is its whole day in
 * UTC; `until` before `since` is refused). Every invalid member in one 422.
 */
export function parseReplayWindow(raw: string | undefined): ReplayWindow {
  const body = parseBodyObject(raw, 'since', '{"since": "2026-11-28T00:00:00Z"}');
  const errors: ParamError[] = refuseUnknownMembers(body, REPLAY_MEMBERS);
  if (body.since === undefined) errors.push({ param: 'since', detail: 'since is required: the earliest failed attempt to send again, such as 2026-11-28T00:00:00Z' });
  const since = body.since === undefined ? undefined : boundOf('since', body.since, 'from', errors);
  const until = body.until === undefined ? undefined : boundOf('until', body.until, 'to', errors);
  if (since !== undefined && until !== undefined && until < since) {
    errors.push({ param: 'until', detail: `until (${formatMicros(until)}) is before since (${formatMicros(since)})` });
  }
  if (errors.length > 0 || since === undefined) throw ApiError.invalidBody(errors);
  return { since: formatMicros(since), ...(until === undefined ? {} : { until: formatMicros(until) }) };
}

function boundOf(param: 'since' | 'until', value: unknown, bound: Bound, errors: ParamError[]): bigint | undefined {
  if (typeof value !== 'string') {
    errors.push({ param, detail: `${param} must be an RFC 3339 timestamp string, got ${typeName(value)}` });
    return undefined;
  }
  const parsed = value.length > MAX_TIMESTAMP_TEXT_LENGTH ? undefined : parseTimestamp(value, bound);
  if (!parsed?.ok) {
    const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
    errors.push({ param, detail: `${param} ${parsed?.reason ?? 'must be an ISO 8601 timestamp such as 2024-05-01T10:00:00.123456Z or a date such as 2024-05-01'}, got '${shown}'` });
    return undefined;
  }
  return parsed.micros;
}
