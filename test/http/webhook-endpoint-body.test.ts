import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/domain/errors.js';
import { parseEndpointCreation, parseEndpointUpdate } from '../../src/http/webhook-endpoint-body.js';
import type { DestinationPolicy } from '../../src/webhooks/destination.js';

const STRICT: DestinationPolicy = { allowPrivate: false, allowHosts: [] };
const PRIVATE_OK: DestinationPolicy = { allowPrivate: true, allowHosts: [] };

/** The `url` error a body gets, or undefined when it is accepted. */
function urlDetail(parse: () => unknown): string | undefined {
  try {
    parse();
    return undefined;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.errors?.find((entry) => entry.param === 'url')?.detail;
  }
}

const creation = (url: string, policy = STRICT) => () => parseEndpointCreation(JSON.stringify({ url, enabled_events: ['*'] }), policy);

describe('a webhook endpoint url refused for pointing at the developer’s own machine', () => {
  it.each(['http://hooks.example.com/in', 'https://localhost:4000/hooks', 'https://127.0.0.1/hooks', 'https://[::1]/', 'https://192.168.1.20/hooks'])(
    'says how to test locally for %s: webhooks listen, or WEBHOOK_ALLOW_PRIVATE=1',
    (url) => {
      for (const parse of [creation(url), () => parseEndpointUpdate(JSON.stringify({ url }), STRICT)]) {
        const detail = urlDetail(parse);
        expect(detail).toMatch(/^url must (be an https:\/\/ URL|not point to a \w+ address); to test a receiver on your own machine/);
        expect(detail).toContain('lending-api webhooks listen --forward-to http://localhost:PORT/PATH');
        expect(detail).toContain('WEBHOOK_ALLOW_PRIVATE=1');
      }
    },
  );

  it('gives no such advice where it would not help: cloud metadata, a scheme no setting allows', () => {
    expect(urlDetail(creation('https://169.254.169.254/latest/'))).toBe('url must not point to a cloud metadata address');
    expect(urlDetail(creation('http://169.254.169.254/latest/', PRIVATE_OK))).toBe('url must not point to a cloud metadata address');
    expect(urlDetail(creation('ftp://hooks.example.com/'))).toBe('url must be an https:// URL');
    expect(urlDetail(creation('http://localhost:4000/hooks', PRIVATE_OK))).toBeUndefined();
  });
});
