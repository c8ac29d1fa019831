import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { PORTAL_BUDGET_BYTES, PORTAL_DIST, portalBundleSizes } from '../../scripts/portal-bundle-size.js';

it('keeps the portal’s JavaScript and CSS within 150 KB gzipped, free of eval and of anything from another origin', () => {
  // `npm test` builds dist/portal-app/ first (scripts/build.mjs --if-stale).
  const sizes = portalBundleSizes();
  expect(sizes.some(({ file }) => file.endsWith('.js'))).toBe(true);
  expect(sizes.some(({ file }) => file.endsWith('.css'))).toBe(true);
  const total = sizes.reduce((sum, { gzipped }) => sum + gzipped, 0);
  expect(total).toBeLessThanOrEqual(PORTAL_BUDGET_BYTES);
  for (const { file } of sizes) {
    const text = readFileSync(path.join(PORTAL_DIST, 'assets', file), 'utf8');
    expect(text.match(/\bnew Function\s*\(|\beval\s*\(/g), file).toBeNull();
    // Namespace names (http://www.w3.org/2000/svg) are not addresses the portal loads.
    expect(text.match(/https?:\/\/(?!www\.w3\.org\/)[\w.-]+/g), file).toBeNull();
  }
  const index = readFileSync(path.join(PORTAL_DIST, 'index.html'), 'utf8');
  // No inline script or style: the CSP allows neither.
  expect(index).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  expect(index).not.toMatch(/<style|style="/);
});
