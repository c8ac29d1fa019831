import { METHODS } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on the routes this mechanism adds (tests tell them from the app's own routes). */
    answersMethodNotAllowed?: boolean;
    /** On those routes: the methods the path serves (their `Allow`, and a CORS preflight's allowed methods). */
    allow?: string;
  }
}

// Every method Node's parser accepts, except CONNECT (a tunnel request, never routed).
const ROUTABLE_METHODS = METHODS.filter((method) => method !== 'CONNECT');

/** A route's path as the router matches it (trailing slashes are ignored). */
function routeKey(url: string): string {
  return url.length > 1 ? url.replace(/\/+$/, '') : url;
}

/**
 * SPEC §2: any other method on a path the app serves is `405` with an
 * `Allow` header. Call before any route is registered; it collects every
 * route (health, API reference, collections, whatever is added later) and
 * returns the function that registers the 405s once all routes exist.
 * The 405 is answered in `onRequest`, before any body is read (and the app
 * closes a connection whose body was left unread).
 */
export function methodNotAllowedForEveryRoute(app: FastifyInstance): () => void {
  for (const method of ROUTABLE_METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true });
  }
  const served = new Map<string, { url: string; methods: Set<string> }>();
  let sealed = false;
  app.addHook('onRoute', (route) => {
    if (sealed) return;
    const key = routeKey(route.url);
    const entry = served.get(key) ?? { url: route.url, methods: new Set<string>() };
    for (const method of [route.method].flat()) entry.methods.add(method);
    if (entry.methods.has('GET')) entry.methods.add('HEAD');
    served.set(key, entry);
  });
  return () => {
    sealed = true;
    for (const { url, methods } of served.values()) {
      const allow = ROUTABLE_METHODS.filter((method) => methods.has(method)).join(', ');
      const others = ROUTABLE_METHODS.filter((method) => !methods.has(method));
      app.route({
        method: others,
        url,
        config: { answersMethodNotAllowed: true, allow },
        onRequest: async (request: FastifyRequest) => {
          throw new ApiError('method_not_allowed', `${request.method} is not allowed here; use ${allow}`, { headers: { allow } });
        },
        handler: async () => undefined,
      });
    }
  };
}
