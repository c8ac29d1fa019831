import type { TrustProxy } from '../domain/trust-proxy-setting.js';

export type { TrustProxy } from '../domain/trust-proxy-setting.js';

/** The value for Fastify's `trustProxy` option. */
export function fastifyTrustProxy(trust: TrustProxy | boolean | undefined): false | string[] | ((address: string, hop: number) => boolean) {
  const setting = trust === true ? 1 : (trust ?? false);
  if (setting === false || setting === 0) return false;
  // Fastify ignores a bare hop count (it cannot check who the nearest peer
  // is), so the count is given as a function: believe the `hops` nearest.
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return [...setting];
}
