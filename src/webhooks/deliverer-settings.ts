import type { FastifyBaseLogger } from 'fastify';
import { DEFAULT_DEADLINE_MS, type AttemptResult } from './attempt.js';
import type { ClaimedDelivery, EndpointSecretsRow, EventRow } from './delivery-claims.js';
import type { DestinationPolicy } from './destination.js';

/** What the deliverer reports of each attempt (src/metrics/webhook-metrics.ts counts it). */
export interface DeliveryObserver {
  /** `answeredAtMs`: when the attempt ended (the receiver's answer, or the failure). */
  attempted(result: AttemptResult, claim: ClaimedDelivery, answeredAtMs: number): void;
}

export interface DelivererOptions {
  /** This node, as `claimed_by` names it. */
  readonly nodeId: string;
  readonly policy: DestinationPolicy;
  /** The secrets that sign for an endpoint: its current one, and a rotated-out one still honoured. */
  readonly secretsOf: (endpoint: EndpointSecretsRow) => readonly string[];
  /** The event as GET /api/events/{id}/ renders it: the delivery's body. */
  readonly renderEvent: (event: EventRow) => unknown;
  readonly log: FastifyBaseLogger;
  readonly observer?: DeliveryObserver | undefined;
  /** Each attempt is over by then (SPEC §3c: a 2xx within 10 s). */
  readonly deadlineMs?: number;
  /** How long a claim holds; must exceed the deadline, with room for recording. */
  readonly claimMs?: number;
  /** The most attempts an endpoint may have in flight, however fast it answers (src/webhooks/endpoint-windows.ts). */
  readonly maxInFlightPerEndpoint?: number;
  /** What an endpoint this node has not yet heard from may have in flight (at most maxInFlightPerEndpoint). */
  readonly initialInFlightPerEndpoint?: number;
  /** A 2xx within this many ms lets the endpoint have one more attempt in flight. */
  readonly fastAnswerMs?: number;
  /** Attempts in flight on this node, over every organization. */
  readonly maxInFlight?: number;
  /** Attempts in flight on this node for one organization: others always find room. */
  readonly maxInFlightPerOrganization?: number;
  /** The most deliveries one organization claims in its turn (src/webhooks/organization-turns.ts). */
  readonly claimsPerTurn?: number;
  /** How often the node looks for due retries and other nodes' events. */
  readonly pollIntervalMs?: number;
  /** The most organizations one look finds; the next look goes on after the last one found. */
  readonly organizationsPerLook?: number;
  /** How long every attempt to an endpoint must have failed before it is disabled. */
  readonly failingDisableMs?: number;
  /** Certificates to trust besides the system's (an internal CA). */
  readonly ca?: string | readonly string[] | undefined;
  readonly random?: () => number;
}

export const DEFAULT_DELIVERER = {
  deadlineMs: DEFAULT_DEADLINE_MS,
  claimMs: 30_000,
  maxInFlightPerEndpoint: 64,
  initialInFlightPerEndpoint: 16,
  fastAnswerMs: 250,
  maxInFlight: 256,
  maxInFlightPerOrganization: 128,
  claimsPerTurn: 32,
  pollIntervalMs: 500,
  organizationsPerLook: 1000,
  failingDisableMs: 3 * 24 * 3600 * 1000,
} as const;

export type DelivererSettings = Required<Omit<DelivererOptions, 'observer' | 'ca' | 'random'>>;
