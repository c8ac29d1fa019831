/**
 * The portal's bundle size: each JavaScript and CSS file of dist/portal-app/assets/ gzipped (level 9), and their
 * sum against the 150 KB budget. `node --import tsx scripts/portal-bundle-size.ts` after `npm run build`;
 * test/portal/bundle-size.test.ts and the bench's `portal` row read the same figures.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

export const PORTAL_DIST = path.resolve(import.meta.dirname, '../dist/portal-app');
/** JavaScript + CSS, gzipped (issue 48). */
export const PORTAL_BUDGET_BYTES = 150 * 1024;

export interface BundleFileSize {
  file: string;
  bytes: number;
  gzipped: number;
}

export function portalBundleSizes(directory = PORTAL_DIST): BundleFileSize[] {
  return readdirSync(path.join(directory, 'assets'))
    .filter((file) => /\.(js|css)$/.test(file))
    .sort()
    .map((file) => {
      const body = readFileSync(path.join(directory, 'assets', file));
      return { file, bytes: body.length, gzipped: gzipSync(body, { level: 9 }).length };
    });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const sizes = portalBundleSizes();
  for (const { file, bytes, gzipped } of sizes) console.log(`${file}: ${bytes} bytes, ${gzipped} gzipped`);
  const total = sizes.reduce((sum, { gzipped }) => sum + gzipped, 0);
  console.log(`JavaScript + CSS: ${total} bytes gzipped (${(total / 1024).toFixed(1)} KB of the ${PORTAL_BUDGET_BYTES / 1024} KB budget)`);
}
