import type { lookup as dnsLookup } from 'node:dns';
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { checkWebhookUrl, normalizeHost, safeLookup, WebhookAddressError, type DestinationPolicy, type UrlCheck } from './destination.js';

export const DEFAULT_DEADLINE_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 1024;
export const WEBHOOK_USER_AGENT = 'lending-api-webhooks/1';

export interface DeliveryAttempt {
  readonly url: string;
  /** The `webhook-*` headers (and any other); content-type, content-length and user-agent are set here. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly policy: DestinationPolicy;
  /** The whole attempt (lookup, connect, TLS, request, response headers and body) ends by then. */
  readonly deadlineMs?: number;
  readonly maxResponseBytes?: number;
  /** Certificates to trust besides the system's (an internal CA; the tests' self-signed one). */
  readonly ca?: string | readonly string[];
  /** The resolver (default `dns.lookup`); every address it returns is checked against the policy. */
  readonly resolve?: typeof dnsLookup;
  /** The endpoint's kept connections (src/webhooks/endpoint-agents.ts); without one, a connection of its own, closed after. */
  readonly agent?: http.Agent;
}

/** Why an attempt failed, for the worker to act on without reading `error`. */
export type AttemptFailure = 'invalid_url' | 'refused_address' | 'timeout' | 'redirect' | 'http_status' | 'tls' | 'network';

export interface AttemptResult {
  /** A 2xx status arrived within the deadline. */
  readonly ok: boolean;
  readonly status: number | null;
  readonly durationMs: number;
  /** What went wrong, for a person; never a header value that signs or authenticates. */
  readonly error: string | null;
  readonly failure: AttemptFailure | null;
  /** The first `maxResponseBytes` of the response body (what had arrived by the deadline). */
  readonly responseBody: string;
}

type Outcome = Pick<AttemptResult, 'error' | 'failure'>;

const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|HOSTNAME_MISMATCH)/;

function describeError(error: unknown, host: string): Outcome {
  if (error instanceof WebhookAddressError) return { failure: 'refused_address', error: error.message };
  const { code = '', message = String(error) } = error as NodeJS.ErrnoException;
  if (TLS_ERROR.test(code)) return { failure: 'tls', error: `TLS failed: ${message} (${code})` };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { failure: 'network', error: `DNS lookup of ${host} failed (${code})` };
  if (code === 'ECONNREFUSED') return { failure: 'network', error: 'connection refused (ECONNREFUSED)' };
  if (code === 'ECONNRESET') return { failure: 'network', error: 'connection closed before a complete response (ECONNRESET)' };
  return { failure: 'network', error: code ? `${message} (${code})` : message };
}

/** HTTP's status codes (RFC 9110 §15): a receiver's answer outside them is an error, never recorded as a status. */
function validStatus(status: number | undefined): status is number {
  return status !== undefined && Number.isInteger(status) && status >= 100 && status <= 599;
}

function statusOutcome(response: IncomingMessage): Outcome {
  const status = response.statusCode ?? 0;
  if (!validStatus(status)) return { failure: 'http_status', error: `the receiver answered a status code outside 100–599 (${String(status).slice(0, 10)})` };
  if (status >= 200 && status < 300) return { failure: null, error: null };
  if (status >= 300 && status < 400) {
    const location = String(response.headers.location ?? '').slice(0, 200);
    return { failure: 'redirect', error: `redirect not followed (${status}${location ? ` to ${location}` : ''})` };
  }
  return { failure: 'http_status', error: `the receiver answered ${status}` };
}

/** Node's messages name headers, not their values, but a signature must not reach a log or a list even if one ever did. */
function redact(text: string, headers: Readonly<Record<string, string>>): string {
  const secrets = Object.entries(headers)
    .filter(([name]) => /signature|secret|authorization|token/i.test(name))
    .flatMap(([, value]) => [value, ...value.split(/[\s,]+/)])
    .filter((part) => part.length >= 8);
  return secrets.reduce((result, secret) => result.split(secret).join('[redacted]'), text).slice(0, 500);
}

/** URLs checked under each policy, kept up to this many: an endpoint's URL is parsed and checked once, not at every attempt. */
const CHECKED_URLS = 1024;
const checkedUrls = new WeakMap<DestinationPolicy, Map<string, UrlCheck>>();

/** checkWebhookUrl, remembered (it depends on the URL's text and the policy alone). */
function checkedUrl(text: string, policy: DestinationPolicy): UrlCheck {
  let checked = checkedUrls.get(policy);
  if (checked === undefined) checkedUrls.set(policy, (checked = new Map()));
  let check = checked.get(text);
  if (check === undefined) {
    if (checked.size >= CHECKED_URLS) checked.clear();
    checked.set(text, (check = checkWebhookUrl(text, policy)));
  }
  return check;
}

/**
 * Makes one webhook delivery attempt: a POST of `body` as JSON, never following
 * a redirect, refusing addresses the policy forbids (checked on the very
 * address connected to), and over by `deadlineMs` whatever the receiver does:
 * the socket is destroyed then, as it is once `maxResponseBytes` of the
 * response have been read. Never throws; every failure is in the result.
 */
export function deliverOnce(attempt: DeliveryAttempt): Promise<AttemptResult> {
  const started = performance.now();
  const deadlineMs = attempt.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const maxResponseBytes = attempt.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const elapsed = () => Math.round(performance.now() - started);

  const checked = checkedUrl(attempt.url, attempt.policy);
  // This also refuses an IP literal the policy forbids: Node connects to one without calling `lookup`.
  if (!checked.ok) {
    const failure = checked.category === null ? 'invalid_url' : 'refused_address';
    return Promise.resolve({ ok: false, status: null, durationMs: elapsed(), failure, error: `the URL ${checked.problem}`, responseBody: '' });
  }
  const url = checked.url;
  const host = normalizeHost(url.hostname);

  return new Promise((resolve) => {
    let settled = false;
    let request: ClientRequest | null = null;
    let response: IncomingMessage | null = null;
    let phase = 'connecting';
    // A connection is kept for the next attempt only when its answer was read to the end.
    let answerRead = false;
    const chunks: Buffer[] = [];
    let received = 0;

    const finish = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (!answerRead) request?.destroy();
      const responseBody = Buffer.concat(chunks).subarray(0, maxResponseBytes).toString('utf8');
      const error = outcome.error === null ? null : redact(outcome.error, attempt.headers);
      const status = validStatus(response?.statusCode) ? response.statusCode : null;
      resolve({ ok: outcome.failure === null, status, durationMs: elapsed(), error, failure: outcome.failure, responseBody });
    };
    // Once the status has arrived it decides the outcome, however the body then ends (or does not).
    const deadline = setTimeout(() => {
      finish(response ? statusOutcome(response) : { failure: 'timeout', error: `timed out after ${deadlineMs} ms ${phase}` });
    }, deadlineMs);

    try {
      request = (url.protocol === 'https:' ? https : http).request({
        method: 'POST',
        hostname: host,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers: {
          ...attempt.headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(attempt.body)),
          'user-agent': WEBHOOK_USER_AGENT,
        },
        // The endpoint's own connections, or a fresh one: an endpoint that hangs holds only its own.
        agent: attempt.agent ?? false,
        lookup: safeLookup(attempt.policy, attempt.resolve),
        ...(attempt.ca === undefined ? {} : { ca: typeof attempt.ca === 'string' ? attempt.ca : [...attempt.ca] }),
      });
    } catch (error) {
      return finish(describeError(error, host));
    }
    request.on('socket', (socket) => {
      // A kept connection is connected already; listening for its 'connect' would only pile up listeners.
      if (!socket.connecting) {
        phase = 'waiting for the response';
        return;
      }
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
        phase = 'waiting for the response';
      });
    });
    request.on('error', (error) => finish(response ? statusOutcome(response) : describeError(error, host)));
    request.on('response', (answer) => {
      response = answer;
      phase = 'reading the response body';
      const done = () => finish(statusOutcome(answer));
      answer.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        received += chunk.length;
        if (received >= maxResponseBytes) done();
      });
      answer.on('end', () => {
        answerRead = received < maxResponseBytes;
        done();
      });
      answer.on('error', done);
      answer.on('close', done);
    });
    request.end(attempt.body);
  });
}
