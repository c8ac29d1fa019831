/**
 * The organization's events log read over HTTP (`GET /api/events/`, SPEC
 * §3c) as a feed: each poll walks the log oldest first from the last event
 * it returned, by the pages' cursor `next` links, and yields only events it
 * has not yielded before. The log's created_at strictly increases per
 * organization and an event enters it only once committed, so a walk from
 * the last event seen misses none, whatever commits meanwhile.
 */
export interface LoggedEvent {
  readonly id: string;
  readonly type: string;
  readonly created_at: string;
  readonly [field: string]: unknown;
}

interface EventsPage {
  readonly next: string | null;
  readonly items: readonly LoggedEvent[];
}

export interface EventsFeedOptions {
  /** The server's root: `http://127.0.0.1:3000`. */
  readonly apiUrl: string;
  readonly org: string;
  readonly key: string;
  /** Start here (inclusive, any form created_from takes); default: after the newest event when the feed starts. */
  readonly since?: string | undefined;
  readonly fetch?: typeof fetch;
}

/** The server answered something the feed cannot go on from (bad credentials, no events endpoint). */
export class EventsFeedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError'; // printed plainly, without a stack (cli/output.ts)
  }
}

/** Events per page of the API (SPEC §2: exactly 10, fewer on the last). */
const PAGE_SIZE = 10;
/** How long one request to the API may take. */
const REQUEST_TIMEOUT_MS = 30_000;

export class EventsFeed {
  /** Where the next walk starts (created_from), and the event found there that was already yielded. */
  private from: string | undefined;
  private seenAtFrom: string | undefined;
  /** The `next` link the last poll ended on: where the next one continues. */
  private resume: string | undefined;
  private started = false;
  private readonly fetch: typeof fetch;
  private readonly authorization: string;

  constructor(private readonly options: EventsFeedOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
    this.authorization = `Basic ${Buffer.from(`${options.org}:${options.key}`).toString('base64')}`;
    this.from = options.since;
  }

  /**
   * Where the feed starts: `since`, or after the newest event in the log now
   * (nothing: from the beginning). Either way one request is made here, so
   * that credentials, or a `since` the server does not read, fail the start.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.started) return;
    if (this.from === undefined) {
      const newest = (await this.get(this.url({}), signal)).items[0];
      if (newest) [this.from, this.seenAtFrom] = [newest.created_at, newest.id];
    } else {
      await this.get(this.url({ created_from: this.from }), signal);
    }
    this.started = true;
  }

  /**
   * The events that entered the log since the last poll, oldest first, a
   * page at a time (a long backlog is not held whole); the feed moves past
   * each event once the consumer asks for the next. A poll ends at a page
   * that is not full: the end of the log for now. Its `next` link (a server
   * links it even at the end of an oldest-first walk) is where the next
   * poll starts; without one, the next poll starts a walk from the last
   * event's created_at.
   */
  async *poll(signal?: AbortSignal): AsyncGenerator<LoggedEvent> {
    await this.start(signal);
    let url = this.resume ?? this.url({ order_by: 'created_at', ...(this.from === undefined ? {} : { created_from: this.from }), cursor: '' });
    for (;;) {
      const page: EventsPage = await this.get(url, signal);
      for (const event of page.items) {
        if (event.id === this.seenAtFrom) continue;
        yield event;
        [this.from, this.seenAtFrom] = [event.created_at, event.id];
      }
      this.resume = page.next ?? undefined;
      if (page.next === null || page.items.length < PAGE_SIZE) return;
      url = page.next;
    }
  }

  private url(params: Record<string, string>): string {
    const url = new URL('api/events/', this.options.apiUrl.endsWith('/') ? this.options.apiUrl : `${this.options.apiUrl}/`);
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    return url.toString();
  }

  private async get(url: string, signal: AbortSignal | undefined): Promise<EventsPage> {
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    const response = await this.fetch(url, {
      headers: { authorization: this.authorization, accept: 'application/json' },
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const text = await response.text();
    if (response.status === 401) throw new EventsFeedError(`${this.options.apiUrl} refused the credentials of ${this.options.org} (401): check --org and --key`);
    if (response.status === 404) {
      throw new EventsFeedError(`${this.options.apiUrl} has no events log (GET /api/events/ answered 404): is it a lending-api server of this version?`);
    }
    // Anything else the request itself got wrong (a --since the server does not read, 422) will not get better.
    if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
      throw new EventsFeedError(`GET /api/events/ answered ${response.status}: ${detailOf(text)}`);
    }
    if (!response.ok) throw new EventsFeedRetry(`GET ${url} answered ${response.status}: ${detailOf(text)}`, retryAfterMs(response));
    const page = JSON.parse(text) as Partial<EventsPage>;
    if (!Array.isArray(page.items)) throw new EventsFeedRetry(`GET ${url} answered a body without items`, undefined);
    return { next: typeof page.next === 'string' ? page.next : null, items: page.items };
  }
}

/** A failure worth trying again at the next poll (the server restarting, a rate limit, an outage). */
export class EventsFeedRetry extends Error {
  constructor(
    message: string,
    /** What the server's Retry-After asked for, if it said. */
    readonly retryAfterMs: number | undefined,
  ) {
    super(message);
    this.name = 'EventsFeedRetry';
  }
}

function retryAfterMs(response: Response): number | undefined {
  const seconds = Number(response.headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
}

/** The problem+json detail of an error answer, or the start of its body. */
function detailOf(text: string): string {
  try {
    const problem = JSON.parse(text) as { detail?: unknown; title?: unknown };
    return String(problem.detail ?? problem.title ?? text).slice(0, 300);
  } catch {
    return text.slice(0, 300);
  }
}
