import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** One member of a Patroni cluster as its REST API's GET /cluster lists it. */
export interface PatroniMember {
  readonly name: string;
  readonly role: string;
  readonly state: string;
  readonly host?: string;
  readonly port?: number;
}

/** How long one REST call may take before the next URL is asked (a frozen member must not hold the probe). */
const CALL_TIMEOUT_MS = 500;

/**
 * Patroni's REST API, asked which member is the synchronous standby. Any
 * member answers GET /cluster for the whole cluster (from etcd), so the node
 * asks each URL in turn until one answers. No answer at all: unknown, and
 * the caller treats its standby as not synchronous (limits refused, never stale).
 */
export class PatroniRest {
  constructor(private readonly urls: readonly string[]) {}

  async members(): Promise<PatroniMember[] | undefined> {
    for (const url of this.urls) {
      try {
        const response = await fetch(`${url.replace(/\/+$/, '')}/cluster`, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
        if (!response.ok) continue;
        const body = (await response.json()) as { members?: PatroniMember[] };
        if (Array.isArray(body.members)) return body.members;
      } catch {
        // Down, frozen or unreachable: ask the next member.
      }
    }
    return undefined;
  }

  /** Whether any member is a running synchronous standby (none for a few seconds after a failover). */
  async hasSynchronousStandby(): Promise<boolean | undefined> {
    const members = await this.members();
    return members?.some(isRunningSynchronousStandby);
  }

  /**
   * Whether the PostgreSQL server at `address`:`port` (as the server itself
   * reports them: inet_server_addr(), inet_server_port()) is the cluster's
   * running synchronous standby; undefined when no member answers.
   */
  async isSynchronousStandby(address: string, port: number): Promise<boolean | undefined> {
    const members = await this.members();
    if (!members) return undefined;
    for (const member of members) {
      if (member.port !== port || member.host === undefined) continue;
      if (await sameHost(member.host, address)) return isRunningSynchronousStandby(member);
    }
    return false;
  }
}

function isRunningSynchronousStandby(member: PatroniMember): boolean {
  return member.role === 'sync_standby' && (member.state === 'running' || member.state === 'streaming');
}

async function sameHost(host: string, address: string): Promise<boolean> {
  if (isIP(host)) return host === address;
  try {
    return (await lookup(host, { all: true })).some((resolved) => resolved.address === address);
  } catch {
    return false;
  }
}
