import { appendFileSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { JsonObject } from '../../src/openapi/json-schema.js';
import { OpenApiContract, type ContractViolation, type ObservedResponse } from './openapi-contract.js';

/** The committed document: what integrators read, kept equal to the generated one by test/openapi. */
export const OPENAPI_FILE = new URL('../../openapi.json', import.meta.url);

export interface ObservedViolation extends ContractViolation {
  readonly request: string;
}

interface PathMatcher {
  readonly template: string;
  readonly pattern: RegExp;
}

type Report = (violation: ObservedViolation) => void;

/**
 * Checks every response a Fastify app gives against the OpenAPI document and
 * hands each violation to `report`: the status is declared for the
 * operation, every header sent is declared, the body is valid. Installed on
 * every Fastify instance of the process (test/helpers/response-contract-hook.ts),
 * so no test has to ask for it. A method a path does not serve (PROPFIND
 * included) is checked against the path's `x-methods-not-allowed`. Paths the
 * document does not have (the reference page's assets, unknown paths) are
 * not checked.
 */
export class ResponseContract {
  readonly #contract: OpenApiContract;
  readonly #paths: PathMatcher[];
  readonly #report: Report;

  constructor(document: JsonObject, report: Report) {
    this.#contract = new OpenApiContract(document);
    // A literal path wins over a template that also matches it (`/api/events/stream/` over `/api/events/{uid}/`), as in the router.
    const parameters = (template: string) => template.split('{').length;
    this.#paths = Object.keys(document.paths as JsonObject)
      .sort((a, b) => parameters(a) - parameters(b))
      .map((template) => ({ template, pattern: patternOf(template) }));
    this.#report = report;
  }

  /**
   * Watches `app`'s answers both ways they leave it: `inject()` (checked when
   * the answer is complete, before the test sees it) and its HTTP server
   * (checked as the answer is written, before the client can read it).
   */
  watch(app: FastifyInstance): void {
    const inject = app.inject.bind(app) as (options?: unknown, callback?: unknown) => unknown;
    const checked = (options?: unknown, callback?: unknown): unknown => {
      // The chain and callback forms are not used by the tests; they pass unchecked.
      if (options === undefined || callback !== undefined) return inject(options, callback);
      return (inject(options) as Promise<LightMyRequestResponse>).then((response) => {
        const request = response.raw.req;
        this.check(request.method ?? 'GET', request.url ?? '/', {
          status: response.statusCode,
          headers: response.headers,
          body: request.method === 'HEAD' ? undefined : response.body,
        });
        return response;
      });
    };
    app.inject = checked as typeof app.inject;

    const server = app.server;
    const listeners = server.listeners('request') as ((request: IncomingMessage, response: ServerResponse) => void)[];
    server.removeAllListeners('request');
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      this.#watchWrites(request, response);
      for (const listener of listeners) listener.call(server, request, response);
    });
  }

  /** Violations are reported, not returned: `method url` as the client sent them. */
  check(method: string, url: string, response: ObservedResponse): void {
    const path = url.split('?')[0] ?? '/';
    const template = this.#paths.find((candidate) => candidate.pattern.test(path))?.template;
    if (template === undefined) return;
    const request = `${method} ${url.slice(0, 200)} → ${response.status}`;
    for (const violation of this.#contract.check(method, template, response)) this.#report({ request, ...violation });
  }

  #watchWrites(request: IncomingMessage, response: ServerResponse): void {
    const writeHead = response.writeHead.bind(response) as (...args: unknown[]) => ServerResponse;
    const write = response.write.bind(response) as (...args: unknown[]) => boolean;
    const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse;
    let headers: Record<string, unknown> | undefined;
    const chunks: Buffer[] = [];
    const keep = (chunk: unknown) => {
      if (typeof chunk === 'string') chunks.push(Buffer.from(chunk));
      else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
    };
    response.writeHead = ((status: number, ...rest: unknown[]) => {
      const given = rest.find((item) => typeof item === 'object' && item !== null && !Array.isArray(item)) as Record<string, unknown> | undefined;
      headers = lowerCased({ ...response.getHeaders(), ...given });
      return writeHead(status, ...rest);
    }) as typeof response.writeHead;
    response.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk);
      return write(chunk, ...rest);
    }) as typeof response.write;
    response.end = ((...args: unknown[]) => {
      if (typeof args[0] !== 'function') keep(args[0]);
      this.check(request.method ?? 'GET', request.url ?? '/', {
        status: response.statusCode,
        headers: headers ?? lowerCased(response.getHeaders()),
        body: request.method === 'HEAD' ? undefined : Buffer.concat(chunks).toString('utf8'),
      });
      return end(...args);
    }) as typeof response.end;
  }
}

/** `/api/methods/{uid}/` → a pattern of the request paths it serves (the router ignores a trailing slash, not repeated ones). */
function patternOf(template: string): RegExp {
  const segments = template.replace(/\/+$/, '').split('/').map((segment) => (/^\{[^}]+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^$()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${segments.join('/')}/?$`);
}

function lowerCased(headers: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== undefined).map(([name, value]) => [name.toLowerCase(), value]));
}

/** The checker of a process, on the committed document (or the one at `file`). */
export function responseContractOfFile(report: Report, file: string | URL = OPENAPI_FILE): ResponseContract {
  return new ResponseContract(JSON.parse(readFileSync(file, 'utf8')) as JsonObject, report);
}

/** A report that appends each violation as a JSON line to `file` (a spawned server's, read by its test). */
export function appendTo(file: string): Report {
  return (violation) => appendFileSync(file, `${JSON.stringify(violation)}\n`);
}
