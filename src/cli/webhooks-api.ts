import { UsageError } from './output.js';

/** Where and as whom the `webhooks` management commands call the API (a running server, a `webhooks`-scoped key). */
export interface ApiTarget {
  readonly apiUrl: string;
  readonly org: string;
  readonly key: string;
}

export interface ApiTargetFlags {
  readonly apiUrl: string;
  readonly org: string;
  readonly key?: string | undefined;
}

/** The server calls take at most this long (a test delivery waits up to 10 s for the receiver). */
const REQUEST_TIMEOUT_MS = 30_000;

/** The target the flags name, the key from --key or LENDING_API_KEY; a usage error for a missing key or a bad URL. */
export function apiTargetOf(command: string, flags: ApiTargetFlags): ApiTarget {
  const key = flags.key ?? process.env.LENDING_API_KEY;
  if (!key) throw new UsageError(`${command} needs a webhooks-scoped API key of the organization: --key or LENDING_API_KEY`);
  let url: URL;
  try {
    url = new URL(flags.apiUrl);
  } catch {
    throw new UsageError(`--api-url must be an http:// or https:// URL, got '${flags.apiUrl}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--api-url must be an http:// or https:// URL, got '${flags.apiUrl}'`);
  return { apiUrl: flags.apiUrl.replace(/\/+$/, ''), org: flags.org, key };
}

/**
 * Calls the API as the SDK would (the same public request a portal button
 * makes) and resolves with the answer's JSON; an answer other than 2xx
 * throws an Error carrying the problem's status, code and detail, which the
 * CLI prints to stderr before exiting 1.
 */
export async function callApi<T>(target: ApiTarget, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const url = `${target.apiUrl}${path}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: {
        authorization: `Basic ${Buffer.from(`${target.org}:${target.key}`).toString('base64')}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    throw new Error(`could not reach ${target.apiUrl}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`);
  }
  const text = await response.text();
  if (response.ok) return JSON.parse(text) as T;
  let problem: { code?: string; detail?: string; errors?: { param: string; detail: string }[] } = {};
  try {
    problem = JSON.parse(text) as typeof problem;
  } catch {
    // Not problem+json (a proxy's page): the status says enough.
  }
  const details = problem.errors?.map((error) => error.detail).join('; ') ?? problem.detail ?? text.slice(0, 200);
  throw new Error(`${method} ${path} answered ${response.status}${problem.code ? ` ${problem.code}` : ''}: ${details}`);
}
