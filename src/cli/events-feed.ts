/**
 * The organization's events read over HTTP as a feed: where it starts is
 * found in the log (`GET /api/events/`), then the feed follows the stream
 * (`GET /api/events/stream/`, SPEC §3c), one request however many events,
 * reconnecting after the last event it returned (`Last-Event-ID`), so it
 * misses none and repeats none, whatever commits meanwhile.
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

/** How long one request to the API may take; a stream, how long it may stay silent (its heartbeat comes every 15 s). */
const REQUEST_TIMEOUT_MS = 30_000;
const STREAM_SILENCE_MS = 45_000;

export class EventsFeed {
  /** Where the next walk starts (created_from), and the event found there that was already yielded. */
  private from: string | undefined;
  private seenAtFrom: string | undefined;
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
      const newest = (await this.get(this.url({}, 'api/events/'), signal)).items[0];
      if (newest) [this.from, this.seenAtFrom] = [newest.created_at, newest.id];
    } else {
      await this.get(this.url({ created_from: this.from }, 'api/events/'), signal);
    }
    this.started = true;
  }

  /**
   * The events after the last one returned (or from `since`, or from where
   * `start` found the end of the log), oldest first, as they enter the log,
   * from one stream request; the feed moves past each event once the
   * consumer asks for the next. Returns when the server ends the stream
   * (call it again to reconnect after the last event).
   */
  async *follow(signal?: AbortSignal): AsyncGenerator<LoggedEvent> {
    await this.start(signal);
    const headers: Record<string, string> = { authorization: this.authorization, accept: 'text/event-stream' };
    if (this.seenAtFrom !== undefined) headers['last-event-id'] = this.seenAtFrom;
    // With no event seen yet: from `since`, or from the start of a log that was empty when the feed started.
    const url = this.url(this.seenAtFrom !== undefined ? {} : { created_from: this.from ?? '1970-01-01' });
    const controller = new AbortController();
    const abort = () => controller.abort();
    signal?.addEventListener('abort', abort, { once: true });
    // A stream silent for longer than its heartbeat allows is a dead connection: end it (the caller reconnects).
    let silence = setTimeout(abort, STREAM_SILENCE_MS);
    try {
      const heard = () => {
        clearTimeout(silence);
        silence = setTimeout(abort, STREAM_SILENCE_MS);
      };
      const response = await this.fetch(url, { headers, signal: controller.signal }).finally(heard);
      if (!response.ok) this.refuse(response, await response.text(), 'GET /api/events/stream/');
      if (!response.body) return;
      for await (const data of eventDataOf(response.body, heard)) {
        const event = JSON.parse(data) as LoggedEvent;
        yield event;
        [this.from, this.seenAtFrom] = [event.created_at, event.id];
      }
    } finally {
      signal?.removeEventListener('abort', abort);
      clearTimeout(silence);
      controller.abort();
    }
  }

  private url(params: Record<string, string>, path = 'api/events/stream/'): string {
    const url = new URL(path, this.options.apiUrl.endsWith('/') ? this.options.apiUrl : `${this.options.apiUrl}/`);
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    return url.toString();
  }

  private refuse(response: Response, text: string, request: string): never {
    throw refusal(this.options.apiUrl, this.options.org, response, text, request);
  }

  private async get(url: string, signal: AbortSignal | undefined): Promise<EventsPage> {
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    const response = await this.fetch(url, {
      headers: { authorization: this.authorization, accept: 'application/json' },
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const text = await response.text();
    if (!response.ok) this.refuse(response, text, 'GET /api/events/');
    const page = JSON.parse(text) as Partial<EventsPage>;
    if (!Array.isArray(page.items)) throw new EventsFeedRetry(`GET ${url} answered a body without items`, undefined);
    return { next: typeof page.next === 'string' ? page.next : null, items: page.items };
  }
}

/** The server's error answer as what the feed makes of it: a failure that will not pass (EventsFeedError), or one to try again. */
function refusal(apiUrl: string, org: string, response: Response, text: string, request: string): Error {
  if (response.status === 401) return new EventsFeedError(`${apiUrl} refused the credentials of ${org} (401): check --org and --key`);
  if (response.status === 404) return new EventsFeedError(`${apiUrl} has no events log (${request} answered 404): is it a lending-api server of this version?`);
  // Anything else the request itself got wrong (a --since the server does not read, 422) will not get better.
  if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
    return new EventsFeedError(`${request} answered ${response.status}: ${detailOf(text)}`);
  }
  return new EventsFeedRetry(`${request} answered ${response.status}: ${detailOf(text)}`, retryAfterMs(response));
}

/** The `data` of each Server-Sent Event of a stream (comments, and an `id` alone, dispatch nothing). */
async function* eventDataOf(body: ReadableStream<Uint8Array>, heard: () => void): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    heard();
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const data = buffer
        .slice(0, end)
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice('data:'.length).replace(/^ /, ''));
      buffer = buffer.slice(end + 2);
      if (data.length > 0) yield data.join('\n');
    }
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
