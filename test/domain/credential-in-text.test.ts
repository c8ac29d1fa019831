import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { holdsCredential, secretCores } from '../../src/domain/credential-in-text.js';

const keyOf = (id: Uint8Array, secret: Uint8Array) => `lak_${Buffer.from(id).toString('hex')}_${Buffer.from(secret).toString('base64url')}`;
const key = fc.tuple(fc.uint8Array({ minLength: 8, maxLength: 8 }), fc.uint8Array({ minLength: 32, maxLength: 32 })).map(([id, secret]) => keyOf(id, secret));
const org = fc.stringMatching(/^org_[a-z0-9_]{1,30}$/);
const around = fc.string({ unit: 'binary-ascii', maxLength: 12 });

describe('holdsCredential', () => {
  it('finds the request’s key wrapped in base64 or base64url with anything around it, at every alignment, in any letter case', () => {
    fc.assert(
      fc.property(key, org, around, around, fc.boolean(), fc.boolean(), (apiKey, organizationId, before, after, url, lower) => {
        const encoded = Buffer.from(`${before}${organizationId}:${apiKey}${after}`, 'latin1').toString(url ? 'base64url' : 'base64');
        expect(holdsCredential(lower ? encoded.toLowerCase() : encoded, { organizationId, apiKey })).toBe(true);
      }),
    );
  });

  it('takes no unrelated value for a credential', () => {
    const presented = { organizationId: 'org_acme', apiKey: keyOf(randomBytes(8), randomBytes(32)) };
    fc.assert(
      fc.property(fc.oneof(fc.uuid(), fc.string({ maxLength: 255 }), fc.base64String({ maxLength: 255 }), fc.webUrl()), (value) => {
        expect(holdsCredential(value, presented)).toBe(false);
      }),
    );
  });

  it('reads each alignment’s core only from the secret’s own bits', () => {
    const secret = Buffer.from('A'.repeat(43));
    const cores = secretCores(secret);
    expect(cores).toHaveLength(3);
    for (const [offset, core] of cores.entries()) {
      const encoded = Buffer.concat([Buffer.from('xyz'.slice(0, offset)), secret, Buffer.from('!')]).toString('base64');
      expect(encoded).toContain(core);
    }
  });
});
