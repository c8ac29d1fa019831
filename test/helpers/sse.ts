/** One Server-Sent Event as a client reads it. */
export interface ServerSentEvent {
  readonly id: string | undefined;
  readonly event: string | undefined;
  readonly data: string;
}

/**
 * A stream opened with fetch and read as Server-Sent Events (the WHATWG
 * parsing rules the service's frames need: `id`, `event`, `data`, comments).
 * `next()` resolves with the next event (comments are counted, not returned).
 */
export class SseReader {
  comments = 0;
  private buffer = '';
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  ended = false;

  private constructor(
    readonly response: Response,
    private readonly controller: AbortController,
  ) {
    if (!response.body) throw new Error('no body');
    this.reader = response.body.getReader();
  }

  static async open(url: string, headers: Record<string, string>): Promise<SseReader> {
    const controller = new AbortController();
    const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
    return new SseReader(response, controller);
  }

  /** The next event, or undefined when the stream ended. */
  async next(): Promise<ServerSentEvent | undefined> {
    for (;;) {
      const end = this.buffer.indexOf('\n\n');
      if (end !== -1) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const parsed = parseBlock(block);
        if (parsed) return parsed;
        this.comments += 1;
        continue;
      }
      const chunk = await this.reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (chunk.done) {
        this.ended = true;
        return undefined;
      }
      this.buffer += this.decoder.decode(chunk.value, { stream: true });
    }
  }

  /** The next `count` events (fails when the stream ends first). */
  async take(count: number): Promise<ServerSentEvent[]> {
    const events: ServerSentEvent[] = [];
    while (events.length < count) {
      const event = await this.next();
      if (!event) throw new Error(`the stream ended after ${events.length} of ${count} events`);
      events.push(event);
    }
    return events;
  }

  /** Waits until `count` comments (heartbeats) more than now have arrived, returning the events met meanwhile. */
  async untilComments(count: number): Promise<ServerSentEvent[]> {
    const target = this.comments + count;
    const events: ServerSentEvent[] = [];
    while (this.comments < target) {
      const end = this.buffer.indexOf('\n\n');
      if (end === -1) {
        const chunk = await this.reader.read();
        if (chunk.done) throw new Error('the stream ended');
        this.buffer += this.decoder.decode(chunk.value, { stream: true });
        continue;
      }
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const parsed = parseBlock(block);
      if (parsed) events.push(parsed);
      else this.comments += 1;
    }
    return events;
  }

  close(): void {
    this.controller.abort();
  }
}

function parseBlock(block: string): ServerSentEvent | undefined {
  let id: string | undefined;
  let event: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  // No data, no event (WHATWG): an `id` alone only moves the last event id.
  if (data.length === 0) return undefined;
  return { id, event, data: data.join('\n') };
}

/** Node's own limits but a short keep-alive: a test client's idle connections do not hold app.close() for 72 s. */
export const STREAM_TEST_HTTP = { headersTimeoutMs: 60_000, requestTimeoutMs: 300_000, keepAliveTimeoutMs: 1000, maxConnections: 0 };

/** Waits until `condition` holds, checking every 20 ms (no deadline of its own: the test's timeout catches a hang). */
export async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
}
