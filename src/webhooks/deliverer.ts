import type { Store } from '../store/store.js';
import { AttemptRecorder } from './attempt-recorder.js';
import { failDueBehindTimeout } from './black-hole-fate.js';
import { claimDueDeliveries, organizationsWithDueDeliveries, type ClaimedDelivery } from './delivery-claims.js';
import type { RecordedAttempt } from './delivery-record.js';
import { DEFAULT_DELIVERER, type DelivererOptions, type DelivererSettings } from './deliverer-settings.js';
import { secretsOncePerEndpoint, sendDelivery, type ClaimSecrets, type SendSettings } from './delivery-sender.js';
import { EndpointAgents } from './endpoint-agents.js';
import { EndpointWindows } from './endpoint-windows.js';
import { OrganizationTurns } from './organization-turns.js';
import { nextAttemptDelayMs } from './retry-schedule.js';

export { DEFAULT_DELIVERER, type DelivererOptions, type DeliveryObserver } from './deliverer-settings.js';

/** After an attempt ends, how long the node waits for more to end before it claims again. */
const REWAKE_MS = 5;
const READ_ONLY_TRANSACTION = '25006';
const READ_ONLY_PAUSE_MS = 5000;

/**
 * Delivers webhooks on a node. The organizations with due deliveries take
 * turns (src/webhooks/organization-turns.ts): a turn is one claim of at most
 * `claimsPerTurn` deliveries, and one organization named while a round runs
 * takes its turn in it, so a fresh event waits for at most one turn of each
 * other organization, whatever their backlogs. Claims go on while the node
 * has room (`maxInFlight`); no organization takes more than its share of it,
 * and no endpoint more than its window (src/webhooks/endpoint-windows.ts).
 * The organizations are those the node knows have work (its publications,
 * its attempts that ended, claims that got all they asked), and on the poll
 * those the database names. A claim is a short transaction; the HTTP attempt
 * runs with no connection or transaction held, bounded by its deadline; its
 * outcome is recorded in one more short transaction. A claim left by a node
 * that died expires and another node takes it: delivery is at least once.
 */
export class Deliverer {
  private readonly settings: DelivererSettings;
  private readonly sending: SendSettings;
  private readonly attempts = new Set<Promise<void>>();
  private readonly inFlightByOrganization = new Map<string, number>();
  private readonly turns = new OrganizationTurns();
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
  private lastFailureLogAt = 0;
  /** On a hot standby every claim fails read-only: look again only this often. */
  private quietUntil = 0;

  constructor(
    private readonly store: Store,
    private readonly options: DelivererOptions,
  ) {
    this.settings = { ...DEFAULT_DELIVERER, ...options };
    this.agents = new EndpointAgents(options.ca);
    this.sending = { policy: options.policy, deadlineMs: this.settings.deadlineMs, renderEvent: options.renderEvent, log: options.log, agents: this.agents, ca: options.ca };
    this.windows = new EndpointWindows({
      initial: Math.min(this.settings.initialInFlightPerEndpoint, this.settings.maxInFlightPerEndpoint),
      max: this.settings.maxInFlightPerEndpoint,
      fastMs: this.settings.fastAnswerMs,
    });
    this.recorder = new AttemptRecorder(store);
    if (this.settings.claimMs <= this.settings.deadlineMs) throw new Error('the claim must outlast the attempt deadline');
    if (this.settings.claimsPerTurn < 1) throw new Error('an organization needs at least one claim per turn');
  }

  start(): void {
    if (this.stopped) return;
    this.timer = setInterval(() => this.wake(), this.settings.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  /**
   * Something may be due: `orgId` just published events on this node, and
   * takes its turn in the round under way; without one, the round asks the
   * database which organizations have due work (other nodes' events,
   * retries come due). Only the poll and this ask it: the question reads
   * an index probe per enabled endpoint.
   */
  wake(orgId?: string): void {
    if (orgId === undefined) this.discover = true;
    else this.turns.add(orgId);
    this.runRound();
  }

  /** Claims now, or right after the ones under way. */
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
        await this.takeTurns();
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

  /**
   * Turns until no organization has one to take or the node is full (the
   * turn order is kept for when a slot frees). An organization whose claim
   * got all it asked has more: its next turn is in the next round. One that
   * got fewer has nothing it may send now; an attempt of its that ends, a
   * publication or the poll names it again (one named during its claim
   * already waits for the next round: its work may be newer than the claim saw).
   */
  private async takeTurns(): Promise<void> {
    if (this.room() <= 0) return;
    if (this.discover) {
      this.discover = false;
      for (const orgId of await this.organizationsWithDueWork()) this.turns.add(orgId);
    }
    while (!this.stopped && this.room() > 0) {
      const orgId = this.turns.next();
      if (orgId === undefined) return;
      const max = Math.min(this.settings.claimsPerTurn, this.room(), this.organizationRoom(orgId));
      // At its share: its attempts that end name it again.
      if (max <= 0) continue;
      let claims: ClaimedDelivery[];
      try {
        claims = await claimDueDeliveries(this.store, orgId, {
          nodeId: this.settings.nodeId,
          claimMs: this.settings.claimMs,
          max,
          perEndpoint: (endpointId) => this.windows.windowOf(endpointId),
        });
      } catch (error) {
        // Its work is still there: its turn comes again when the claims are tried again (the next wake or poll).
        this.turns.add(orgId);
        throw error;
      }
      const secretsOf = secretsOncePerEndpoint(this.options.secretsOf);
      for (const claim of claims) this.launch(claim, secretsOf);
      if (claims.length === max) this.turns.add(orgId);
    }
  }

  private organizationRoom(orgId: string): number {
    return this.settings.maxInFlightPerOrganization - (this.inFlightByOrganization.get(orgId) ?? 0);
  }

  private countInFlight(orgId: string, change: 1 | -1): void {
    const count = (this.inFlightByOrganization.get(orgId) ?? 0) + change;
    if (count === 0) this.inFlightByOrganization.delete(orgId);
    else this.inFlightByOrganization.set(orgId, count);
  }

  private launch(claim: ClaimedDelivery, secretsOf: ClaimSecrets): void {
    this.countInFlight(claim.orgId, 1);
    const attempt = this.attempt(claim, secretsOf).finally(() => {
      this.attempts.delete(attempt);
      this.countInFlight(claim.orgId, -1);
      // A slot is free (and the endpoint has room again). On a running node, the slots freed
      // within a few milliseconds are claimed again together: one claim for many deliveries.
      this.turns.add(claim.orgId);
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
    const result = await sendDelivery(claim, secretsOf, this.sending);
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
    if (result.failure === 'timeout' && recorded.state === 'pending') await this.shareTimeout(claim);
    if (recorded.endpointDisabled) {
      this.options.log.warn({ org_id: claim.orgId, endpoint_id: claim.endpointId }, 'webhook endpoint disabled: every attempt failed for 3 days');
    }
  }

  /** Retries keep their schedule behind a black hole (src/webhooks/black-hole-fate.ts). */
  private async shareTimeout(claim: ClaimedDelivery): Promise<void> {
    const timedOut = { orgId: claim.orgId, endpointId: claim.endpointId, eventUid: claim.event.uid, deadlineMs: this.settings.deadlineMs };
    try {
      await failDueBehindTimeout(this.store, timedOut, this.options.random);
    } catch (error) {
      this.failed(error, 'could not fail the deliveries waiting behind a timed-out attempt; they are attempted in turn');
    }
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
