import type { FrameAncestors } from '../domain/frame-ancestors-setting.js';

/**
 * The portal's Content-Security-Policy: everything from this origin, nothing
 * inline, no eval, no other origin (no CDN, no web fonts), and framed only by
 * PORTAL_FRAME_ANCESTORS (`'none'` when it lists none).
 */
export function portalCsp(frameAncestors: FrameAncestors): string {
  const ancestors = frameAncestors.length > 0 ? frameAncestors.join(' ') : "'none'";
  return (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; " +
    `manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors ${ancestors}`
  );
}
