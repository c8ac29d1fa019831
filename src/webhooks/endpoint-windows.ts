import type { AttemptResult } from './attempt.js';

export interface EndpointWindowSettings {
  /** An endpoint this node has not heard from may have this many attempts in flight. */
  readonly initial: number;
  /** The most any endpoint may have, however fast it answers. */
  readonly max: number;
  /** An answer within this many ms counts as fast: the endpoint may have one more in flight. */
  readonly fastMs: number;
}

/** Endpoints whose window a node remembers; the least recently heard beyond it start again from `initial`. */
export const REMEMBERED_ENDPOINTS = 4096;

interface Window {
  readonly size: number;
  /** What it was before timeouts or failed connections cut it: given back when the endpoint answers again. */
  readonly beforeCut: number;
}

/**
 * How many attempts each endpoint may have in flight, learned from how it
 * answers, as TCP learns a congestion window: one more after each fast 2xx,
 * half as many (at least one) after each timeout or failed connection. A
 * fast receiver grows to `max` and is not held to a few deliveries per round
 * trip of claims; a black hole is down to one socket after its first
 * deadlines. An endpoint that answers again (any status, fast or slow) gets
 * back the window it had before they cut it, at once: one answer shows it is
 * no black hole, and a slow receiver held to one attempt at a time would fall
 * further behind with every event. A slow one or one answering errors
 * otherwise stays where it was. The window is the node's own; the claim
 * enforces it over every node (src/webhooks/delivery-claims.ts), so an
 * endpoint never has more in flight than the largest window any node gives it.
 */
export class EndpointWindows {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly settings: EndpointWindowSettings) {
    if (settings.initial < 1 || settings.max < settings.initial) throw new Error('an endpoint window needs 1 ≤ initial ≤ max');
  }

  windowOf(endpointId: string): number {
    return this.windows.get(endpointId)?.size ?? this.settings.initial;
  }

  answered(endpointId: string, result: Pick<AttemptResult, 'ok' | 'failure' | 'durationMs' | 'status'>): void {
    const current = this.windows.get(endpointId) ?? { size: this.settings.initial, beforeCut: this.settings.initial };
    let next = current;
    if (result.failure === 'timeout' || result.failure === 'network' || result.failure === 'tls') {
      next = { size: Math.max(1, Math.floor(current.size / 2)), beforeCut: current.beforeCut };
    } else if (result.ok || result.status !== null) {
      const size = Math.max(current.size, current.beforeCut);
      const grown = result.ok && result.durationMs <= this.settings.fastMs ? Math.min(this.settings.max, size + 1) : size;
      next = { size: grown, beforeCut: grown };
    }
    this.windows.delete(endpointId);
    if (next.size === this.settings.initial && next.beforeCut === this.settings.initial) return;
    this.windows.set(endpointId, next);
    if (this.windows.size > REMEMBERED_ENDPOINTS) this.windows.delete(this.windows.keys().next().value!);
  }
}
