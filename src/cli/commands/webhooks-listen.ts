import { setTimeout as sleep } from 'node:timers/promises';
import { newSigningSecret, signingKey } from '../../webhooks/signature.js';
import { EventsFeed, EventsFeedError, EventsFeedRetry } from '../events-feed.js';
import { forwardEvent } from '../forward-event.js';
import { UsageError, type OutputOptions } from '../output.js';

export interface WebhooksListenFlags extends OutputOptions {
  forwardTo: string;
  apiUrl: string;
  org: string;
  key?: string;
  since?: string;
  secret?: string;
  interval: string;
}

const MIN_INTERVAL_MS = 100;
/** After a receiver's 400: the usual cause is a receiver verifying with another secret than the one listen signs with. */
export const SECRET_MISMATCH_HINT = ' (a 400 is often a signature checked under another secret: verify with the one listen printed, or pass yours with --secret)';

/**
 * `webhooks listen --forward-to URL` (like `stripe listen`): follows the
 * organization's events over HTTP (GET /api/events/stream/ with the
 * organization's key, beside a running `serve`, whose embedded store no
 * other process may open; one request, reconnected after the last event
 * when it ends) from now or `--since`, and POSTs each new event,
 * signed as a webhook endpoint would receive it, to a local URL; one line
 * per event. Runs until SIGINT or SIGTERM, then ends after the event it is
 * forwarding. A forward that fails is reported, not retried.
 */
export async function runWebhooksListen(flags: WebhooksListenFlags): Promise<void> {
  const options = checkedOptions(flags);
  const feed = new EventsFeed({ apiUrl: flags.apiUrl, org: flags.org, key: options.key, since: flags.since });
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const say = (json: object, human: string) => process.stdout.write(`${flags.json ? JSON.stringify(json) : human}\n`);
  try {
    if (!(await retrying(() => feed.start(stop.signal), options.intervalMs, stop.signal))) return;
    say(
      { ready: true, org: flags.org, api_url: flags.apiUrl, forward_to: flags.forwardTo, secret: options.secret },
      `Ready: forwarding the events of ${flags.org} from ${flags.apiUrl} to ${flags.forwardTo} (Ctrl-C to stop)\nwebhook signing secret: ${options.secret}`,
    );
    while (!stop.signal.aborted) {
      const polled = await retrying(
        async () => {
          for await (const event of feed.follow(stop.signal)) {
            const result = await forwardEvent(event, flags.forwardTo, options.secret);
            const answer = result.status !== null ? `${result.status}${result.status === 400 ? SECRET_MISMATCH_HINT : ''}` : `failed: ${result.error}`;
            say(
              { id: event.id, type: event.type, created_at: event.created_at, status: result.status, error: result.error, duration_ms: result.durationMs },
              `${event.created_at}  ${event.type}  ${event.id}  → ${answer}`,
            );
            if (stop.signal.aborted) return;
          }
        },
        options.intervalMs,
        stop.signal,
      );
      if (!polled) break;
      await sleep(options.intervalMs, undefined, { signal: stop.signal }).catch(() => {});
    }
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
  process.stderr.write('lending-api: webhooks listen stopped\n');
}

function checkedOptions(flags: WebhooksListenFlags): { key: string; secret: string; intervalMs: number } {
  const key = flags.key ?? process.env.LENDING_API_KEY;
  if (!key) throw new UsageError('webhooks listen needs an API key of the organization: --key or LENDING_API_KEY');
  for (const [name, value] of [['--forward-to', flags.forwardTo], ['--api-url', flags.apiUrl]] as const) {
    if (!/^https?:$/.test(protocolOf(value))) throw new UsageError(`${name} must be an http:// or https:// URL, got '${value}'`);
  }
  const secret = flags.secret ?? newSigningSecret();
  try {
    signingKey(secret);
  } catch {
    throw new UsageError('--secret must be whsec_ followed by base64 (as an endpoint secret is)');
  }
  const intervalMs = Number(flags.interval);
  if (!Number.isInteger(intervalMs) || intervalMs < MIN_INTERVAL_MS) throw new UsageError(`--interval must be a whole number of milliseconds ≥ ${MIN_INTERVAL_MS}, got '${flags.interval}'`);
  return { key, secret, intervalMs };
}

/**
 * Runs `work`, and again after a pause while it fails in a way that may pass
 * (the server unreachable or restarting, a rate limit), saying so once per
 * run of failures. Resolves to false when stopped meanwhile; a failure that
 * will not pass (EventsFeedError) is thrown.
 */
async function retrying(work: () => Promise<void>, intervalMs: number, signal: AbortSignal): Promise<boolean> {
  let warned = false;
  for (;;) {
    try {
      await work();
      if (warned) process.stderr.write('lending-api: the events log answers again\n');
      return !signal.aborted;
    } catch (error) {
      if (signal.aborted) return false;
      if (error instanceof EventsFeedError) throw error;
      if (!warned) process.stderr.write(`lending-api: cannot read the events log yet (${reasonOf(error)}); trying again\n`);
      warned = true;
      const wait = error instanceof EventsFeedRetry && error.retryAfterMs !== undefined ? Math.max(error.retryAfterMs, intervalMs) : intervalMs;
      await sleep(wait, undefined, { signal }).catch(() => {});
      if (signal.aborted) return false;
    }
  }
}

/** `http:` of `http://…`; '' for what is not a URL (URL.parse is Node ≥ 22). */
function protocolOf(text: string): string {
  try {
    return new URL(text).protocol;
  } catch {
    return '';
  }
}

function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  return error instanceof Error ? error.message : String(error);
}
