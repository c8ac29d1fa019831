import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { blockedCategory } from '../../src/webhooks/address-ranges.js';
import { checkWebhookUrl, safeLookup, WebhookAddressError, type DestinationPolicy } from '../../src/webhooks/destination.js';

const STRICT: DestinationPolicy = { allowPrivate: false, allowHosts: [] };
const PRIVATE_OK: DestinationPolicy = { allowPrivate: true, allowHosts: [] };

describe('blockedCategory', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['198.18.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['169.254.169.254', 'cloud metadata'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['100.100.100.200', 'cloud metadata'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['[::ffff:169.254.169.254]', 'cloud metadata'],
    ['::ffff:10.1.2.3', 'private'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'cloud metadata'],
    ['2002:c0a8:0101::1', 'private'],
    ['not-an-address', 'reserved'],
  ])('%s is %s', (address, category) => {
    expect(blockedCategory(address)).toBe(category);
  });

  // Every way an IPv6 address wraps an IPv4 one, in every textual form (issue 49: the IPv4-translated range got through).
  it.each([
    ['::ffff:0:127.0.0.1', 'loopback'], // IPv4-translated ::ffff:0:0:0/96 (RFC 6145)
    ['::ffff:0:7f00:1', 'loopback'],
    ['::FFFF:0:A9FE:A9FE', 'cloud metadata'],
    ['[::ffff:0:169.254.169.254]', 'cloud metadata'],
    ['0:0:0:0:ffff:0:a00:1', 'private'],
    ['0000:0000:0000:0000:0000:FFFF:A9FE:A9FE', 'cloud metadata'], // IPv4-mapped, uncompressed, upper case
    ['::ffff:a9fe:a9fe%eth0', 'cloud metadata'], // with a zone
    ['::169.254.169.254', 'cloud metadata'], // IPv4-compatible ::/96 (deprecated)
    ['::a9fe:a9fe', 'cloud metadata'],
    ['::127.0.0.1', 'loopback'],
    ['::8.8.8.8', 'reserved'],
    ['::2', 'reserved'],
    ['64:ff9b::10.0.0.1', 'private'], // well-known NAT64
    ['64:FF9B::A9FE:A9FE', 'cloud metadata'],
    ['64:ff9b:1::a9fe:a9fe', 'cloud metadata'], // local-use NAT64 (RFC 8215), at /96
    ['64:ff9b:1:0:a9:fea9:fe00:0', 'cloud metadata'], // … at /64
    ['64:ff9b:1:a9:fe:a9fe::', 'cloud metadata'], // … at /56
    ['64:ff9b:1:a9fe:a9:fe00::', 'cloud metadata'], // … at /48
    ['64:ff9b:1::7f00:1', 'loopback'],
    ['64:ff9b:1::8.8.8.8', 'reserved'],
    ['2002:a9fe:a9fe::1', 'cloud metadata'], // 6to4
    ['2002:7f00:1::', 'loopback'],
    ['2001:0:4136:e378:8000:63bf:5601:5601', 'cloud metadata'], // Teredo, client 169.254.169.254 (bits inverted)
    ['2001:0:a9fe:a9fe::1', 'cloud metadata'], // Teredo, server 169.254.169.254
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // Teredo, client 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'reserved'], // Teredo, client 8.8.8.8: not globally reachable itself
    ['0x7f.1', 'loopback'], // IPv4 in hex, octal and decimal parts, as a resolver reads them
    ['2130706433', 'loopback'],
    ['0177.0.0.1', 'loopback'],
    ['0xa9.0xfe.0xa9.0xfe', 'cloud metadata'],
  ])('%s is %s', (address, category) => {
    expect(blockedCategory(address)).toBe(category);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '::ffff:0:8.8.8.8', '2002:808:808::1'])('%s is public', (address) => {
    expect(blockedCategory(address)).toBeNull();
  });

  it('answers the same for an address asked again, before and after thousands of others were asked', () => {
    const asked = ['127.0.0.1', '10.0.0.1', '8.8.8.8', '169.254.169.254', '::ffff:127.0.0.1'];
    const first = asked.map((address) => blockedCategory(address));
    expect(first).toEqual(['loopback', 'private', null, 'cloud metadata', 'loopback']);
    for (let i = 0; i < 10_000; i += 1) expect(blockedCategory(`11.${(i >> 8) & 255}.${i & 255}.1`)).toBeNull();
    expect(asked.map((address) => blockedCategory(address))).toEqual(first);
    expect(blockedCategory('127.0.0.2')).toBe('loopback');
  });
});

describe('checkWebhookUrl', () => {
  it('accepts a public https URL with a port, path and query', () => {
    const result = checkWebhookUrl('https://hooks.example.com:8443/in?source=lending', STRICT);
    expect(result).toMatchObject({ ok: true });
    expect(result.ok && result.url.port).toBe('8443');
  });

  it.each([
    ['not a url', 'must be an absolute URL'],
    ['http://hooks.example.com/', 'must be an https:// URL'],
    ['ftp://hooks.example.com/', 'must be an https:// URL'],
    ['https://user:pass@hooks.example.com/', 'must not contain a user name or password'],
    ['https://token@hooks.example.com/', 'must not contain a user name or password'],
    ['https://hooks.example.com/#frag', 'must not contain a fragment (#…)'],
    ['https://hooks.example.com/#', 'must not contain a fragment (#…)'],
    ['https://127.0.0.1/', 'must not point to a loopback address'],
    ['https://[::1]/', 'must not point to a loopback address'],
    ['https://[::ffff:127.0.0.1]/', 'must not point to a loopback address'],
    ['https://10.0.0.1/', 'must not point to a private address'],
    ['https://169.254.169.254/latest/meta-data/', 'must not point to a cloud metadata address'],
    ['https://2130706433/', 'must not point to a loopback address'],
    ['https://localhost:3000/', 'must not point to a loopback address'],
    ['https://api.localhost/', 'must not point to a loopback address'],
    [`https://hooks.example.com/${'a'.repeat(2100)}`, 'must be at most 2048 characters'],
  ])('refuses %s: %s', (url, problem) => {
    expect(checkWebhookUrl(url, STRICT)).toMatchObject({ ok: false, problem });
  });

  it.each([
    ['https://[::ffff:0:127.0.0.1]/', 'loopback'],
    ['https://[::ffff:0:169.254.169.254]/', 'cloud metadata'],
    ['https://[64:ff9b:1::a9fe:a9fe]/', 'cloud metadata'],
    ['https://[2002:a9fe:a9fe::1]/', 'cloud metadata'],
    ['https://[2001:0:4136:e378:8000:63bf:5601:5601]/', 'cloud metadata'],
    ['https://[::169.254.169.254]/', 'cloud metadata'],
    ['https://[0:0:0:0:0:FFFF:7F00:1]/', 'loopback'],
    ['https://0x7f.1/', 'loopback'],
    ['https://0177.0.0.1/', 'loopback'],
    ['https://127.1/', 'loopback'],
    ['https://0xA9FEA9FE/', 'cloud metadata'],
    ['https://169.254.169.254./', 'cloud metadata'],
  ])('refuses %s, in whatever form it names the address: %s', (url, category) => {
    expect(checkWebhookUrl(url, STRICT)).toMatchObject({ ok: false, category, problem: `must not point to a ${category} address` });
  });

  it('refuses an embedded cloud metadata address even with allowPrivate, and allows an embedded loopback one', () => {
    for (const url of ['https://[::ffff:0:169.254.169.254]/', 'http://[64:ff9b:1::a9fe:a9fe]/', 'http://[2001:0:4136:e378:8000:63bf:5601:5601]/', 'http://[::a9fe:a9fe]/']) {
      expect(checkWebhookUrl(url, PRIVATE_OK), url).toEqual({ ok: false, category: 'cloud metadata', problem: 'must not point to a cloud metadata address' });
    }
    expect(checkWebhookUrl('http://[::ffff:0:127.0.0.1]:8080/', PRIVATE_OK)).toMatchObject({ ok: true });
  });

  it('allows plain http and private addresses with allowPrivate, but never cloud metadata', () => {
    for (const url of ['http://127.0.0.1:8080/hook', 'https://[::1]/', 'http://10.0.0.1/', 'http://localhost/']) {
      expect(checkWebhookUrl(url, PRIVATE_OK)).toMatchObject({ ok: true });
    }
    expect(checkWebhookUrl('http://169.254.169.254/', PRIVATE_OK)).toEqual({ ok: false, category: 'cloud metadata', problem: 'must not point to a cloud metadata address' });
    expect(checkWebhookUrl('ftp://10.0.0.1/', PRIVATE_OK)).toEqual({ ok: false, category: null, problem: 'must be an http:// or https:// URL' });
  });

  it('allows an allow-listed host over http and to a private address, and only that host', () => {
    const policy: DestinationPolicy = { allowPrivate: false, allowHosts: ['Hooks.Internal', '10.0.0.5', '::1'] };
    expect(checkWebhookUrl('http://hooks.internal:9000/in', policy)).toMatchObject({ ok: true });
    expect(checkWebhookUrl('https://10.0.0.5/', policy)).toMatchObject({ ok: true });
    expect(checkWebhookUrl('http://[::1]:8080/', policy)).toMatchObject({ ok: true });
    expect(checkWebhookUrl('https://10.0.0.6/', policy)).toEqual({ ok: false, category: 'private', problem: 'must not point to a private address', allowedWithPrivate: true });
    expect(checkWebhookUrl('http://other.internal/', policy)).toEqual({ ok: false, category: null, problem: 'must be an https:// URL', allowedWithPrivate: true });
  });
});

type Answer = { error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };

/** Runs a safeLookup whose DNS answers `addresses` for every name. */
function lookupWith(policy: DestinationPolicy, addresses: LookupAddress[], hostname = 'hooks.example.com', all = false): Promise<Answer> {
  const fakeDns = ((_name: string, _options: unknown, callback: (error: null, addresses: LookupAddress[]) => void) => callback(null, addresses)) as never;
  return new Promise((resolve) => safeLookup(policy, fakeDns)(hostname, { all }, (error, address, family) => resolve({ error, address, family })));
}

describe('safeLookup', () => {
  it('hands a public address to the socket, in the form asked for', async () => {
    const addresses = [{ address: '93.184.215.14', family: 4 }, { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 }];
    expect(await lookupWith(STRICT, addresses)).toEqual({ error: null, address: '93.184.215.14', family: 4 });
    expect(await lookupWith(STRICT, addresses, 'hooks.example.com', true)).toEqual({ error: null, address: addresses, family: undefined });
  });

  it('refuses when any address the name resolves to is blocked (a rebinding answer among public ones)', async () => {
    const { error } = await lookupWith(STRICT, [{ address: '93.184.215.14', family: 4 }, { address: '169.254.169.254', family: 4 }]);
    expect(error).toBeInstanceOf(WebhookAddressError);
    expect(error).toMatchObject({ code: 'ERR_WEBHOOK_ADDRESS', category: 'cloud metadata', address: '169.254.169.254' });
    expect(error?.message).toBe('refused to deliver to hooks.example.com: it resolves to 169.254.169.254, a cloud metadata address');
  });

  it('refuses localhost, which really resolves to loopback', async () => {
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => safeLookup(STRICT)('localhost', {}, (caught) => resolve(caught)));
    expect(error).toMatchObject({ code: 'ERR_WEBHOOK_ADDRESS', category: 'loopback' });
  });

  it('lets private addresses through with allowPrivate or for an allow-listed host, but not cloud metadata', async () => {
    const loopback = [{ address: '127.0.0.1', family: 4 }];
    const metadata = [{ address: '169.254.169.254', family: 4 }];
    expect((await lookupWith(PRIVATE_OK, loopback)).error).toBeNull();
    expect((await lookupWith(PRIVATE_OK, metadata)).error).toMatchObject({ category: 'cloud metadata' });
    const listed: DestinationPolicy = { allowPrivate: false, allowHosts: ['hooks.internal'] };
    expect((await lookupWith(listed, loopback, 'hooks.internal')).error).toBeNull();
    expect((await lookupWith(listed, loopback, 'other.internal')).error).toMatchObject({ category: 'loopback' });
    expect((await lookupWith(listed, metadata, 'hooks.internal')).error).toMatchObject({ category: 'cloud metadata' });
  });

  it('refuses, at delivery time, a DNS answer that wraps a refused IPv4 address in IPv6, whatever the policy for metadata', async () => {
    const wrapped = ['::ffff:0:7f00:1', '::ffff:0:a9fe:a9fe', '64:ff9b:1::a9fe:a9fe', '64:ff9b::a9fe:a9fe', '2002:a9fe:a9fe::1', '2001:0:4136:e378:8000:63bf:5601:5601', '::169.254.169.254'];
    for (const address of wrapped) {
      const { error } = await lookupWith(STRICT, [{ address: '93.184.215.14', family: 4 }, { address, family: 6 }]);
      expect(error, address).toMatchObject({ code: 'ERR_WEBHOOK_ADDRESS', address });
    }
    for (const address of wrapped.slice(1)) {
      expect((await lookupWith(PRIVATE_OK, [{ address, family: 6 }])).error, address).toMatchObject({ category: 'cloud metadata' });
    }
    expect((await lookupWith(PRIVATE_OK, [{ address: '::ffff:0:7f00:1', family: 6 }])).error).toBeNull();
  });

  it('passes DNS failures through unchanged', async () => {
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => safeLookup(STRICT)('no-such-host.invalid', {}, (caught) => resolve(caught)));
    expect(error?.code).toMatch(/ENOTFOUND|EAI_AGAIN/);
  });
});
