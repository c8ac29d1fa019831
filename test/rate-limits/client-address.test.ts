import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { throttleAddressOf } from '../../src/rate-limits/client-address.js';

const hextet = fc.integer({ min: 0, max: 0xffff });
const hextets = fc.array(hextet, { minLength: 8, maxLength: 8 });

/** Ways of writing the same IPv6 address: full with leading zeros, uppercase, or the longest zero run as `::`. */
function spellings(groups: number[]): string[] {
  const full = groups.map((group) => group.toString(16).padStart(4, '0')).join(':');
  const short = groups.map((group) => group.toString(16)).join(':');
  const compressed = new URL(`http://[${short}]/`).hostname.slice(1, -1);
  return [full, full.toUpperCase(), short, compressed];
}

describe('throttleAddressOf: what the failure throttle counts against', () => {
  it('groups an IPv6 address by its /64, however it is written', () => {
    fc.assert(
      fc.property(hextets, hextets, (address, other) => {
        const isMapped = address.slice(0, 5).every((group) => group === 0) && address[5] === 0xffff;
        fc.pre(!isMapped);
        const groups = spellings(address).map(throttleAddressOf);
        expect(new Set(groups).size).toBe(1);
        expect(groups[0]).toMatch(/\/64$/);
        // Same first 64 bits, any last 64: same group; a different first 64 bits: another group.
        const sameNetwork = [...address.slice(0, 4), ...other.slice(4)];
        expect(throttleAddressOf(spellings(sameNetwork)[3] ?? '')).toBe(groups[0]);
        const otherNetwork = [...other.slice(0, 4), ...address.slice(4)];
        const differs = other.slice(0, 4).some((group, i) => group !== address[i]);
        const otherIsMapped = otherNetwork.slice(0, 5).every((group) => group === 0) && otherNetwork[5] === 0xffff;
        if (differs && !otherIsMapped) expect(throttleAddressOf(spellings(otherNetwork)[0] ?? '')).not.toBe(groups[0]);
      }),
    );
  });

  it.each([
    ['203.0.113.9', '203.0.113.9'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['::FFFF:cb00:7109', '203.0.113.9'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002::1', '2001:db8:1:2::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    ['::1', '::/64'],
    ['64:ff9b::203.0.113.9', '64:ff9b::/64'],
  ])('%s counts as %s', (address, group) => {
    expect(throttleAddressOf(address)).toBe(group);
  });
});
