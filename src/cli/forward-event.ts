import { deliverOnce, type AttemptResult } from '../webhooks/attempt.js';
import { signPayload } from '../webhooks/signature.js';
import type { LoggedEvent } from './events-feed.js';

/**
 * POSTs one event to the developer's local URL as a webhook endpoint would
 * receive it (Standard Webhooks: `webhook-id` the event id,
 * `webhook-timestamp`, `webhook-signature` under `secret`), through the
 * deliverer's own attempt (its deadline, no redirects followed). The URL is
 * the developer's choice, so loopback and private addresses are allowed.
 */
export function forwardEvent(event: LoggedEvent, forwardTo: string, secret: string): Promise<AttemptResult> {
  const body = JSON.stringify(event);
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = signPayload({ id: event.id, timestamp, body }, [secret]);
  return deliverOnce({
    url: forwardTo,
    headers: { 'webhook-id': event.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature },
    body,
    policy: { allowPrivate: true, allowHosts: [new URL(forwardTo).hostname] },
  });
}
