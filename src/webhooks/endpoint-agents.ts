import http from 'node:http';
import https from 'node:https';

/** How long a connection to a receiver stays open with nothing to send. */
export const IDLE_CONNECTION_MS = 15_000;
/** Endpoints whose connections a node keeps; the least recently used beyond it are closed. */
export const MAX_KEPT_ENDPOINTS = 1024;

/**
 * The connections a node keeps open to each webhook endpoint between
 * attempts (keep-alive), one pool per endpoint and URL: a new TCP (and TLS)
 * handshake per event would cost more than the event itself. A pool is never
 * shared between endpoints, so a receiver that hangs holds only its own
 * connections; how many are open at once is bounded by the endpoint's claims
 * (its window, src/webhooks/endpoint-windows.ts). A connection is opened through the
 * attempt's address check (src/webhooks/destination.ts), so a kept one was
 * checked when it was opened; an attempt that fails or runs out of time
 * destroys its connection.
 */
export class EndpointAgents {
  private readonly agents = new Map<string, http.Agent>();

  constructor(private readonly ca?: string | readonly string[]) {}

  agentFor(endpointId: string, url: string): http.Agent {
    const key = `${endpointId} ${url}`;
    const kept = this.agents.get(key);
    if (kept) {
      // Most recently used last: the first entry is the one to close when there are too many.
      this.agents.delete(key);
      this.agents.set(key, kept);
      return kept;
    }
    for (const [otherKey, other] of this.agents) {
      if (otherKey.startsWith(`${endpointId} `)) {
        // The endpoint's URL changed: its old connections are of no more use.
        this.agents.delete(otherKey);
        other.destroy();
      }
    }
    const options = { keepAlive: true, timeout: IDLE_CONNECTION_MS, scheduling: 'lifo' as const };
    const agent = url.startsWith('https:')
      ? new https.Agent({ ...options, ...(this.ca === undefined ? {} : { ca: typeof this.ca === 'string' ? this.ca : [...this.ca] }) })
      : new http.Agent(options);
    this.agents.set(key, agent);
    if (this.agents.size > MAX_KEPT_ENDPOINTS) this.closeLeastRecentlyUsedIdle();
    return agent;
  }

  /** An attempt in flight keeps its pool: at most the node's in-flight bound of pools are busy. */
  private closeLeastRecentlyUsedIdle(): void {
    for (const [key, agent] of this.agents) {
      const busy = Object.keys(agent.sockets).length > 0 || Object.keys(agent.requests).length > 0;
      if (busy) continue;
      this.agents.delete(key);
      agent.destroy();
      return;
    }
  }

  /** Endpoints with a pool now (tests). */
  get size(): number {
    return this.agents.size;
  }

  /** Closes every kept connection. */
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}
