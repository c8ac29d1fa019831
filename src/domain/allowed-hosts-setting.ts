/**
 * The host names this service answers for (ALLOWED_HOSTS), after Django's
 * setting of that name: `api.example.com` matches that name exactly,
 * `.example.com` the domain and every subdomain, `*` any host; IP literals
 * as written in a URL (`127.0.0.1`, `[::1]`). Letter case, a trailing dot
 * and the port do not matter.
 */
export type AllowedHosts = readonly string[];

// A host name (labels of letters, digits and hyphens) or an IPv4 or bracketed IPv6 literal, then an optional
// port: nothing that could smuggle a path or another URL into the links built from it.
const HOST_AND_PORT = /^(?<name>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::(?<port>\d{1,5}))?$/;
const MAX_NAME_LENGTH = 253;
const MAX_LABEL_LENGTH = 63;
const MAX_PORT = 65_535;

export interface ParsedHost {
  /** Lower case, without a trailing dot; an IPv6 literal keeps its brackets. */
  readonly name: string;
  readonly port: number | undefined;
}

/**
 * A `Host` value as RFC 3986 allows it here: a name of at most 253
 * characters in labels of at most 63 (RFC 1035), or an IP literal, and a
 * port from 1 to 65535. Undefined for anything else.
 */
export function parseHost(value: string): ParsedHost | undefined {
  const match = HOST_AND_PORT.exec(value);
  const rawName = match?.groups?.name;
  if (rawName === undefined) return undefined;
  const name = rawName.toLowerCase().replace(/\.$/, '');
  if (name.length === 0 || name.length > MAX_NAME_LENGTH) return undefined;
  if (!name.startsWith('[') && name.split('.').some((label) => label.length === 0 || label.length > MAX_LABEL_LENGTH)) return undefined;
  const rawPort = match?.groups?.port;
  const port = rawPort === undefined ? undefined : Number(rawPort);
  if (port !== undefined && (port < 1 || port > MAX_PORT)) return undefined;
  return { name, port };
}

export function hostIsAllowed(name: string, allowed: AllowedHosts): boolean {
  return allowed.some((pattern) => pattern === '*' || pattern === name || (pattern.startsWith('.') && (name === pattern.slice(1) || name.endsWith(pattern))));
}

/**
 * ALLOWED_HOSTS parsed: comma-separated names, `.domain` patterns or `*`,
 * normalized as hostIsAllowed compares them (a bare IPv6 address gets its
 * brackets). A port, a path or anything else that is no host name is an error.
 */
export function parseAllowedHosts(raw: string): { hosts: AllowedHosts } | { error: string } {
  const hosts: string[] = [];
  for (const item of raw.split(',').map((part) => part.trim())) {
    if (item === '*') {
      hosts.push(item);
      continue;
    }
    const literal = /^[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*$/.test(item) ? `[${item}]` : item;
    const domain = literal.startsWith('.');
    const parsed = parseHost(domain ? literal.slice(1) : literal);
    if (item === '' || !parsed || parsed.port !== undefined || (domain && parsed.name.startsWith('['))) {
      return { error: `must be comma-separated host names without a port (api.example.com), .domain patterns (.example.com) or *, got '${item}'` };
    }
    hosts.push(domain ? `.${parsed.name}` : parsed.name);
  }
  return { hosts: [...new Set(hosts)] };
}

/** The hosts served when ALLOWED_HOSTS is not set: the listen address, the loopback names, and PUBLIC_URL's host. */
export function defaultAllowedHosts(listenHost: string, publicUrl: string | undefined): AllowedHosts {
  const names = [listenHost, 'localhost', '127.0.0.1', '::1', ...(publicUrl ? [new URL(publicUrl).hostname] : [])];
  // A listen address that is no host name (HOST accepts what the OS resolves) is simply not among them.
  const hosts = names.flatMap((name) => {
    const parsed = parseAllowedHosts(name);
    return 'hosts' in parsed ? parsed.hosts : [];
  });
  return [...new Set(hosts)];
}
