import type { EndpointHealth } from '../../webhooks/endpoint-health.js';
import { print, type OutputOptions } from '../output.js';
import { apiTargetOf, callApi, type ApiTargetFlags } from '../webhooks-api.js';

interface Endpoint {
  id: string;
  url: string;
  enabled_events: string[];
  disabled: boolean;
  disabled_reason: string | null;
  health: EndpointHealth;
}
interface Page<T> {
  next: string | null;
  items: T[];
}

type Flags = ApiTargetFlags & OutputOptions;

const ENDPOINTS = '/api/webhook_endpoints/';
const pathOf = (id: string, action = '') => `${ENDPOINTS}${encodeURIComponent(id)}/${action}`;

/** `webhooks endpoints`: the organization's endpoints (at most 16) with their health, one line each. */
export async function runWebhooksEndpoints(flags: Flags): Promise<void> {
  const target = apiTargetOf('webhooks endpoints', flags);
  const endpoints: Endpoint[] = [];
  for (let page = 1; ; page += 1) {
    const answer = await callApi<Page<Endpoint>>(target, 'GET', `${ENDPOINTS}?page=${page}`);
    endpoints.push(...answer.items);
    if (answer.next === null) break;
  }
  const lines = endpoints.map(({ id, url, disabled, disabled_reason, health }) => {
    const state = disabled ? `disabled (${disabled_reason ?? 'requested'})` : health.failing_since ? `failing since ${health.failing_since}` : 'enabled';
    return `${id}  ${url}\n  ${state}; ${health.pending} pending; last 24 h: ${health.succeeded_24h} succeeded, ${health.failed_24h} failed; last success ${health.last_success_at ?? 'never'}`;
  });
  print(flags, endpoints, endpoints.length === 0 ? `${target.org} has no webhook endpoints` : lines.join('\n'));
}

/** `webhooks resend EVENT`: POST /api/events/{id}/resend/ (folded into a delivery already waiting). */
export async function runWebhooksResend(eventId: string, flags: Flags & { endpoint?: string }): Promise<void> {
  const target = apiTargetOf('webhooks resend', flags);
  const body = flags.endpoint === undefined ? {} : { endpoint: flags.endpoint };
  const answer = await callApi<{ event: string; endpoints: string[] }>(target, 'POST', `/api/events/${encodeURIComponent(eventId)}/resend/`, body);
  print(flags, answer, answer.endpoints.length === 0 ? `${answer.event}: no enabled endpoint takes it; nothing sent` : `${answer.event} goes again to ${answer.endpoints.join(', ')}`);
}

/** `webhooks replay ENDPOINT --since T [--until T]`: send again what failed in the window. */
export async function runWebhooksReplay(endpointId: string, flags: Flags & { since: string; until?: string }): Promise<void> {
  const target = apiTargetOf('webhooks replay', flags);
  const body = { since: flags.since, ...(flags.until === undefined ? {} : { until: flags.until }) };
  const answer = await callApi<{ endpoint: string; since: string; until: string; count: number }>(target, 'POST', pathOf(endpointId, 'replay/'), body);
  print(flags, answer, `${answer.count} event${answer.count === 1 ? '' : 's'} queued again for ${answer.endpoint} (last attempt failed between ${answer.since} and ${answer.until})`);
}

/** `webhooks test ENDPOINT`: a signed webhook_endpoint.test delivery; exits 1 when the receiver did not answer 2xx. */
export async function runWebhooksTest(endpointId: string, flags: Flags): Promise<void> {
  const target = apiTargetOf('webhooks test', flags);
  const answer = await callApi<{ endpoint: string; ok: boolean; status_code: number | null; duration_ms: number; error: string | null }>(target, 'POST', pathOf(endpointId, 'test/'), {});
  const outcome = answer.ok ? `answered ${answer.status_code}` : `failed: ${answer.error ?? 'no answer'}`;
  print(flags, answer, `${answer.endpoint}: test delivery ${outcome} in ${answer.duration_ms} ms`);
  if (!answer.ok) process.exitCode = 1;
}
