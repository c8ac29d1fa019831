import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AuthCache } from '../auth/auth-cache.js';
import { basicAuthHook, requireAuth } from '../auth/basic-auth-hook.js';
import { ApiError } from '../domain/errors.js';
import { truncate } from '../domain/truncate.js';
import { parseStreamQuery, streamStart } from '../events/event-stream-reader.js';
import { EventStreamWakeups } from '../events/event-stream-wakeups.js';
import { authenticateWithLimits } from '../rate-limits/rate-limits.js';
import type { Store } from '../store/store.js';
import { DEFAULT_EVENT_STREAM, EventStreamBody, type EventStreamSettings } from './event-stream-body.js';
import type { DatabaseOf } from './request-database.js';
import { stillAuthenticates } from './stream-credentials.js';
import { StreamSlots } from './stream-slots.js';

export const EVENT_STREAM_PATH = '/api/events/stream/';
/** The longest Last-Event-ID read (an event id is at most 255 characters). */
const MAX_LAST_EVENT_ID_LENGTH = 255;
/** setTimeout's longest delay (about 24 days); a session lasts at most an hour. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface EventStreamRoutesOptions {
  readonly store: Store;
  readonly databaseOf: DatabaseOf;
  readonly authCache?: AuthCache | undefined;
  readonly settings?: Partial<EventStreamSettings> | undefined;
  /** The node's wakeups, which its publisher wakes too; absent: the routes' own, woken by polling only. */
  readonly wakeups?: EventStreamWakeups | undefined;
}

/**
 * `GET /api/events/stream/` (SPEC §3c): the organization's log as
 * Server-Sent Events for any key. Opening one is one request against the
 * key's read budget (the authentication hook counts it); a key has at most
 * `perKey` open on a node (429 beyond). The stream's reads go to the store
 * directly, not within the request's database time, which a stream that
 * lasts hours would outlive.
 */
export const eventStreamRoutes = fp(registerEventStreams, {
  name: 'event-stream-routes',
});

async function registerEventStreams(app: FastifyInstance, options: EventStreamRoutesOptions): Promise<void> {
  const settings: EventStreamSettings = {
    ...DEFAULT_EVENT_STREAM,
    ...options.settings,
  };
  const { store, databaseOf } = options;
  const slots = new StreamSlots(settings.perKey);
  const wakeups = options.wakeups ?? new EventStreamWakeups(store, { pollIntervalMs: settings.pollIntervalMs });
  const open = new Map<EventStreamBody, FastifyReply['raw']>();
  app.decorate('eventStreams', { slots, wakeups, open });
  // Before the server waits for its connections: open streams end and their connections close, so closing
  // does not wait on readers (they reconnect elsewhere with Last-Event-ID).
  app.addHook('preClose', (done) => {
    const closing = [...open];
    for (const [body] of closing) body.finish();
    wakeups.close();
    setImmediate(() => {
      for (const [, response] of closing) response.destroy();
      done();
    });
  });

  // The route in a context of its own: its authentication hook is not the app's.
  await app.register(async (authenticated) => {
    authenticateWithLimits(authenticated, basicAuthHook(databaseOf, options.authCache));
    authenticated.get(EVENT_STREAM_PATH, async (request, reply) => {
      const auth = requireAuth(request);
      const { orgId, keyId } = auth;
      const query = parseStreamQuery(rawQueryOf(request));
      const lastEventId = lastEventIdOf(request);
      const release = slots.take(keyId);
      if (!release) {
        throw new ApiError('rate_limited', `this API key already has ${settings.perKey} event streams open (at most ${settings.perKey} a key): close one, or use another key`, {
          // The request budget's headers, which every answer to an authenticated request carries.
          headers: { ...budgetHeadersOf(reply), 'retry-after': '1' },
        });
      }
      let start;
      try {
        start = await streamStart(databaseOf(request), orgId, query, lastEventId);
      } catch (error) {
        release();
        throw error;
      }
      const unfollow = wakeups.follow(orgId);
      let sessionEnd: NodeJS.Timeout | undefined;
      // A stream ends when its credentials stop working: at the first check after a revocation or a sign-out
      // (and at a known end, below). A check the database cannot answer leaves the stream be: its own reads
      // meet the same outage.
      const authorization = request.headers.authorization;
      const credentialCheck = setInterval(() => {
        stillAuthenticates(store, authorization, keyId).then(
          (valid) => {
            if (!valid) body.finish();
          },
          () => undefined,
        );
      }, settings.credentialCheckMs);
      credentialCheck.unref();
      const body: EventStreamBody = new EventStreamBody({
        db: store,
        orgId,
        query,
        start,
        wakeups,
        settings,
        onEnd: () => {
          clearTimeout(sessionEnd);
          clearInterval(credentialCheck);
          open.delete(body);
          unfollow();
          release();
        },
      });
      // A portal session's or a key's known end (the hour, expires_at), to the millisecond. The reader's
      // reconnection is then refused like any request.
      if (auth.keyExpiresAtMs !== undefined) {
        sessionEnd = setTimeout(() => body.finish(), Math.min(Math.max(auth.keyExpiresAtMs - Date.now(), 0), MAX_TIMER_MS));
        sessionEnd.unref();
      }
      open.set(body, reply.raw);
      // The reader left: stop reading the log for it. The stream failed (cut, or the database away): end the connection.
      reply.raw.once('close', () => body.destroy());
      // A reader that half-closes its side (FIN) has gone too: Node keeps writing to a half-open connection, and
      // would hear of it only when a write failed — seconds or heartbeats later, its place among the key's streams held.
      request.raw.socket.once('end', () => reply.raw.destroy());
      body.once('error', () => reply.raw.destroy());
      return (
        reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-store')
          // nginx and similar proxies would otherwise buffer the stream.
          .header('x-accel-buffering', 'no')
          .send(body)
      );
    });
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The node's open event streams (tests and metrics read them). */
    eventStreams?: {
      slots: StreamSlots;
      wakeups: EventStreamWakeups;
      open: Map<EventStreamBody, FastifyReply['raw']>;
    };
  }
}

/** The Last-Event-ID header (a reconnect), or undefined; an empty one means none (EventSource sends it so after a reset). */
function lastEventIdOf(request: FastifyRequest): string | undefined {
  const value = request.headers['last-event-id'];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > MAX_LAST_EVENT_ID_LENGTH || !/^[\x21-\x7e]+$/.test(value)) {
    throw ApiError.invalidParameters([
      {
        param: 'Last-Event-ID',
        // Header bytes arrive as latin1: a value that is not printable ASCII is named, not echoed as mojibake.
        detail: /^[\x20-\x7e]*$/.test(String(value))
          ? `Last-Event-ID must be one event id (evt_…) as the stream sent it, got '${truncate(String(value))}'`
          : 'Last-Event-ID must be one event id (evt_…) as the stream sent it, in printable ASCII',
      },
    ]);
  }
  return value;
}

function budgetHeadersOf(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    const value = reply.getHeader(name);
    if (value !== undefined) headers[name] = String(value);
  }
  return headers;
}

function rawQueryOf(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const start = url.indexOf('?');
  return start === -1 ? '' : url.slice(start + 1);
}
