import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../store/store.js';
import { deliverOnce, DEFAULT_DEADLINE_MS, type AttemptResult } from './attempt.js';
import { claimDueDeliveries, organizationsWithDueDeliveries, type ClaimedDelivery, type EndpointSecretsRow, type EventRow } from './delivery-claims.js';
import { AttemptRecorder } from './attempt-recorder.js';
import type { RecordedAttempt } from './delivery-record.js';
import type { DestinationPolicy } from './destination.js';
import { EndpointAgents } from './endpoint-agents.js';
import { EndpointWindows } from './endpoint-windows.js';
import { nextAttemptDelayMs } from './retry-schedule.js';
import { signPayload } from './signature.js';

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
  /** Claims one organization gets per turn. */
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

/** The secrets that sign a claimed delivery (opened once per endpoint and claim). */
type ClaimSecrets = (claim: ClaimedDelivery) => readonly string[];

/** After an attempt ends, how long the node waits for more to end before it claims again. */
const REWAKE_MS = 5;
const READ_ONLY_TRANSACTION = '25006';
const READ_ONLY_PAUSE_MS = 5000;

/**
 * Delivers webhooks on a `serve` node. Each round gives the organizations
 * with due deliveries turns (a few claims each, round-robin, starting after
 * the one served first last time) until the node's in-flight bound is
 * reached; no organization takes more than its share of it, and no endpoint
 * more than its window (src/webhooks/endpoint-windows.ts). The organizations
 * are those the node knows have work, and on the poll those the database
 * names (wake). A claim is a short transaction; the HTTP attempt runs
 * with no connection or transaction held, bounded by its deadline; its
 * outcome is recorded in one more short transaction. A claim left by a node
 * that died expires and another node takes it: delivery is at least once.
 */
export class Deliverer {
  private readonly settings: Required<Omit<DelivererOptions, 'observer' | 'ca' | 'random'>>;
  private readonly attempts = new Set<Promise<void>>();
  private readonly inFlightByOrganization = new Map<string, number>();
  /** Organizations this node knows have work: events published here, attempts just ended, a claim that got all it asked. */
  private readonly known = new Set<string>();
  /** Organizations named (a wake, an attempt that ended) since their last claim began: that claim's snapshot may predate the work. */
  private readonly namedSinceClaim = new Set<string>();
  /** The next round asks the database which organizations have due work. */
  private discover = true;
  /** Where the next look starts: after the last organization of a look that found as many as it could take. */
  private lookedThrough: string | undefined;
  private readonly agents: EndpointAgents;
  private readonly windows: EndpointWindows;
  private readonly recorder: AttemptRecorder;
  private wakeTimer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private firstServed: string | undefined;
  private lastFailureLogAt = 0;
  /** On a hot standby every claim fails read-only: look again only this often. */
  private quietUntil = 0;

  constructor(
    private readonly store: Store,
    private readonly options: DelivererOptions,
  ) {
    this.settings = { ...DEFAULT_DELIVERER, ...options };
    this.agents = new EndpointAgents(options.ca);
    this.windows = new EndpointWindows({
      initial: Math.min(this.settings.initialInFlightPerEndpoint, this.settings.maxInFlightPerEndpoint),
      max: this.settings.maxInFlightPerEndpoint,
      fastMs: this.settings.fastAnswerMs,
    });
    this.recorder = new AttemptRecorder(store);
    if (this.settings.claimMs <= this.settings.deadlineMs) throw new Error('the claim must outlast the attempt deadline');
  }

  start(): void {
    if (this.stopped) return;
    this.timer = setInterval(() => this.wake(), this.settings.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  /**
   * Something may be due: `orgId` just published events on this node, and
   * its deliveries are claimed at once; without one, the round asks the
   * database which organizations have due work (other nodes' events,
   * retries come due). Only the poll and this ask it: the question reads
   * every due delivery, thousands when an endpoint is down.
   */
  wake(orgId?: string): void {
    if (orgId === undefined) this.discover = true;
    else this.hasWork(orgId);
    this.runRound();
  }

  /** A round now, or right after the one running. */
  private runRound(): void {
    if (this.stopped || Date.now() < this.quietUntil) return;
    if (this.round) {
      this.again = true;
      return;
    }
    this.round = this.rounds().finally(() => {
      this.round = undefined;
      // A wake that came after the rounds' last look at `again` but before this: its round is now.
      if (this.again) this.runRound();
    });
  }

  /** Attempts in flight on this node. */
  get inFlight(): number {
    return this.attempts.size;
  }

  /**
   * One round now, every attempt it started, recorded, and the rounds their
   * ends start (on a node not started, an attempt that ends claims again at
   * once), until nothing is in flight (tests: nothing of it outlives the call).
   */
  async deliverDue(): Promise<void> {
    this.wake();
    do {
      await this.round;
      await this.idle();
    } while (this.round !== undefined || this.attempts.size > 0);
  }

  /** Resolves once no attempt is in flight. */
  async idle(): Promise<void> {
    while (this.attempts.size > 0) await Promise.all([...this.attempts]);
  }

  /**
   * Stops claiming. Attempts in flight are abandoned, not recorded: their
   * claims expire and another node (or this one, restarted) makes them again.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.wakeTimer);
    await this.round;
    await this.recorder.drain();
    this.agents.destroy();
  }

  private async rounds(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.claimRound();
      } catch (error) {
        this.failed(error, 'could not claim webhook deliveries; trying again');
      }
    } while (this.again && !this.stopped);
  }

  /** A full answer: the next look goes on after it; a short one reached the end: the next starts from the first again. */
  private async organizationsWithDueWork(): Promise<string[]> {
    const limit = this.settings.organizationsPerLook;
    const found = await organizationsWithDueDeliveries(this.store, limit, this.lookedThrough);
    this.lookedThrough = found.length >= limit ? found.at(-1) : undefined;
    return found;
  }

  private room(): number {
    return this.settings.maxInFlight - this.attempts.size;
  }

  private async claimRound(): Promise<void> {
    if (this.room() <= 0) return;
    const discover = this.discover;
    this.discover = false;
    const found = discover ? await this.organizationsWithDueWork() : [];
    let waiting = this.fairOrder([...new Set([...found, ...this.known])]);
    while (waiting.length > 0 && !this.stopped && this.room() > 0) {
      const more: string[] = [];
      for (const orgId of waiting) {
        if (this.room() <= 0 || this.stopped) break;
        const max = Math.min(this.settings.claimsPerTurn, this.room(), this.organizationRoom(orgId));
        if (max <= 0) continue;
        this.namedSinceClaim.delete(orgId);
        const claims = await claimDueDeliveries(this.store, orgId, {
          nodeId: this.settings.nodeId,
          claimMs: this.settings.claimMs,
          max,
          perEndpoint: (endpointId) => this.windows.windowOf(endpointId),
        });
        // A claim's deliveries to one endpoint were joined to the same row of it: its secrets are opened once per claim
        // (AES-GCM, about 5 µs each). Every launch signs before its first await; nothing keeps them after the loop.
        const opened = new Map<string, readonly string[]>();
        const secretsOf: ClaimSecrets = (claim) => {
          let secrets = opened.get(claim.endpointId);
          if (secrets === undefined) opened.set(claim.endpointId, (secrets = this.options.secretsOf(claim.endpoint)));
          return secrets;
        };
        for (const claim of claims) this.launch(claim, secretsOf);
        opened.clear();
        // Fewer than asked: nothing more it can send now. An attempt of its that ends, a publication or the poll brings it
        // back — unless one of those came during the claim: its work may be newer than the claim saw.
        if (claims.length === max) more.push(orgId);
        else if (!this.namedSinceClaim.has(orgId)) this.known.delete(orgId);
      }
      waiting = more;
    }
  }

  private hasWork(orgId: string): void {
    this.known.add(orgId);
    this.namedSinceClaim.add(orgId);
  }

  private organizationRoom(orgId: string): number {
    return this.settings.maxInFlightPerOrganization - (this.inFlightByOrganization.get(orgId) ?? 0);
  }

  private countInFlight(orgId: string, change: 1 | -1): void {
    const count = (this.inFlightByOrganization.get(orgId) ?? 0) + change;
    if (count === 0) this.inFlightByOrganization.delete(orgId);
    else this.inFlightByOrganization.set(orgId, count);
  }

  /** The organizations in id order, starting after the one served first last round (a full round leaves none behind for long). */
  private fairOrder(organizations: string[]): string[] {
    const sorted = [...organizations].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
    const start = this.firstServed === undefined ? 0 : sorted.findIndex((orgId) => BigInt(orgId) > BigInt(this.firstServed!));
    const ordered = start <= 0 ? sorted : [...sorted.slice(start), ...sorted.slice(0, start)];
    this.firstServed = ordered[0] ?? this.firstServed;
    return ordered;
  }

  private launch(claim: ClaimedDelivery, secretsOf: ClaimSecrets): void {
    this.countInFlight(claim.orgId, 1);
    const attempt = this.attempt(claim, secretsOf).finally(() => {
      this.attempts.delete(attempt);
      this.countInFlight(claim.orgId, -1);
      // A slot is free (and the endpoint has room again). On a running node, the slots freed
      // within a few milliseconds are claimed again together: one claim for many deliveries.
      this.hasWork(claim.orgId);
      if (this.timer === undefined) this.runRound();
      else
        this.wakeTimer ??= setTimeout(() => {
          this.wakeTimer = undefined;
          this.runRound();
        }, REWAKE_MS);
    });
    this.attempts.add(attempt);
  }

  private async attempt(claim: ClaimedDelivery, secretsOf: ClaimSecrets): Promise<void> {
    const result = await this.send(claim, secretsOf);
    const answeredAtMs = Date.now();
    if (this.stopped) return;
    this.windows.answered(claim.endpointId, result);
    const retryDelayMs = result.ok ? null : nextAttemptDelayMs(claim.attempt, this.options.random);
    let recorded: RecordedAttempt;
    try {
      recorded = await this.recorder.record({
        claim,
        result,
        options: { nodeId: this.settings.nodeId, retryDelayMs, failingDisableMs: this.settings.failingDisableMs },
      });
    } catch (error) {
      this.failed(error, 'could not record a webhook attempt; its claim expires and the attempt is made again');
      return;
    }
    this.options.observer?.attempted(result, claim, answeredAtMs);
    if (recorded.endpointDisabled) {
      this.options.log.warn({ org_id: claim.orgId, endpoint_id: claim.endpointId }, 'webhook endpoint disabled: every attempt failed for 3 days');
    }
  }

  private async send(claim: ClaimedDelivery, secretsOf: ClaimSecrets): Promise<AttemptResult> {
    let headers: Record<string, string>;
    let body: string;
    try {
      body = JSON.stringify(this.options.renderEvent(claim.event));
      const timestamp = Math.floor(Date.now() / 1000);
      const signature = signPayload({ id: claim.event.uid, timestamp, body }, secretsOf(claim));
      headers = { 'webhook-id': claim.event.uid, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
    } catch (error) {
      // Never the message: it could quote what it failed to open.
      this.options.log.error({ org_id: claim.orgId, endpoint_id: claim.endpointId }, 'could not sign a webhook delivery (is WEBHOOK_SECRET_KEY the one the secrets were sealed with?)');
      void error;
      return { ok: false, status: null, durationMs: 0, failure: null, error: 'the delivery could not be signed', responseBody: '' };
    }
    return deliverOnce({
      url: claim.url,
      headers,
      body,
      policy: this.options.policy,
      deadlineMs: this.settings.deadlineMs,
      agent: this.agents.agentFor(claim.endpointId, claim.url),
      ...(this.options.ca === undefined ? {} : { ca: this.options.ca }),
    });
  }

  private failed(error: unknown, message: string): void {
    // A hot standby's node serves reads only: the primary's nodes deliver.
    const now = Date.now();
    if ((error as { code?: unknown } | undefined)?.code === READ_ONLY_TRANSACTION) {
      this.quietUntil = now + READ_ONLY_PAUSE_MS;
      return;
    }
    if (now - this.lastFailureLogAt < this.settings.pollIntervalMs) return;
    this.lastFailureLogAt = now;
    this.options.log.warn({ err: error }, message);
  }
}
