import type { FastifyBaseLogger } from 'fastify';
import { deliverOnce, type AttemptResult } from './attempt.js';
import type { ClaimedDelivery, EndpointSecretsRow, EventRow } from './delivery-claims.js';
import type { DestinationPolicy } from './destination.js';
import type { EndpointAgents } from './endpoint-agents.js';
import { signingKey, signWithKeys } from './signature.js';

/** The HMAC keys that sign a claimed delivery (its endpoint's secrets, opened once per endpoint and claim). */
export type ClaimSecrets = (claim: ClaimedDelivery) => readonly Buffer[];

export interface SendSettings {
  readonly policy: DestinationPolicy;
  readonly deadlineMs: number;
  readonly renderEvent: (event: EventRow) => unknown;
  readonly log: FastifyBaseLogger;
  readonly agents: EndpointAgents;
  readonly ca?: string | readonly string[] | undefined;
}

/**
 * Signing opens each endpoint's secrets once per claim: a claim's deliveries
 * to one endpoint were joined to the same row of it (AES-GCM, about 5 µs
 * each). Every launch signs before its first await; nothing keeps them
 * after the claim's launches.
 */
export function secretsOncePerEndpoint(open: (endpoint: EndpointSecretsRow) => readonly string[]): ClaimSecrets {
  const opened = new Map<string, readonly Buffer[]>();
  return (claim) => {
    let keys = opened.get(claim.endpointId);
    if (keys === undefined) opened.set(claim.endpointId, (keys = open(claim.endpoint).map(signingKey)));
    return keys;
  };
}

/** Signs the claimed delivery (Standard Webhooks) and makes its attempt; never throws. */
export async function sendDelivery(claim: ClaimedDelivery, secretsOf: ClaimSecrets, settings: SendSettings): Promise<AttemptResult> {
  let headers: Record<string, string>;
  let body: string;
  try {
    body = JSON.stringify(settings.renderEvent(claim.event));
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = signWithKeys({ id: claim.event.uid, timestamp, body }, secretsOf(claim));
    headers = { 'webhook-id': claim.event.uid, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
  } catch (error) {
    // Never the message: it could quote what it failed to open.
    settings.log.error({ org_id: claim.orgId, endpoint_id: claim.endpointId }, 'could not sign a webhook delivery (is WEBHOOK_SECRET_KEY the one the secrets were sealed with?)');
    void error;
    return { ok: false, status: null, durationMs: 0, failure: null, error: 'the delivery could not be signed', responseBody: '' };
  }
  return deliverOnce({
    url: claim.url,
    headers,
    body,
    policy: settings.policy,
    deadlineMs: settings.deadlineMs,
    agent: settings.agents.agentFor(claim.endpointId, claim.url),
    ...(settings.ca === undefined ? {} : { ca: settings.ca }),
  });
}
