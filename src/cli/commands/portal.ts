import { loadConfig } from '../../config.js';
import { operatorPortalLink } from '../../portal/cli-portal-link.js';
import { print, UsageError, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

export interface PortalFlags extends OutputOptions {
  org: string;
  key?: string;
  url?: string;
}

/**
 * `portal`: prints a one-time link into the organization's portal, for the
 * key named by --key or else its newest active read key (docs/portal.md
 * "Access: sessions and links"). The link's base is --url, else PUBLIC_URL,
 * else the address `serve` listens on (HOST, PORT).
 */
export async function runPortal(flags: PortalFlags): Promise<void> {
  if (flags.key !== undefined && /^lak_/i.test(flags.key)) {
    throw new UsageError('--key takes the key id (key_…), not the key: it was not printed; `key list --org ORG` shows the ids');
  }
  const config = loadConfig();
  const base = baseUrlOf(flags.url ?? config.publicUrl ?? `http://${config.host}:${config.port}`);
  const link = await withStore((store) => operatorPortalLink(store, flags.org, base, flags.key));
  print(
    flags,
    link,
    [`${link.url}`, `one-time link into ${link.org}'s portal with key ${link.key_id} (${link.scope}); open it before ${link.expires_at}: it lasts 10 minutes and opens one session of at most an hour`].join('\n'),
  );
}

function baseUrlOf(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url must be an absolute http(s) URL such as https://lending.example.com, got '${raw}'`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    throw new UsageError(`--url must be an http(s) URL without a query or fragment, got '${raw}'`);
  }
  return url.href.replace(/\/+$/, '');
}
