// Builds the portal (portal/, SPEC §9) into dist/portal-app/: index.html and assets/ with hashed names, served by
// the service at /portal/. scripts/build.mjs runs it (so `npm ci` and `npm run build` build the portal too).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('./portal', import.meta.url));

export default defineConfig({
  root,
  base: '/portal/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('./dist/portal-app', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // The polyfill would be a script of its own; every browser the portal supports preloads modules.
    modulePreload: { polyfill: false },
    // Every asset a file of its own: the CSP allows no data: script or style.
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
});
