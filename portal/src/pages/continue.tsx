import { useEffect, useRef } from 'preact/hooks';

/**
 * Opened from a link: the token is exchanged only when a person presses Continue, so a link scanner that runs
 * the page's script (mail "safe links", chat previews) neither uses up the link nor holds its session.
 */
export function ContinueToPortal({ onContinue }: { onContinue: () => void }) {
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => button.current?.focus(), []);
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">Open the portal</h1>
      <p>This link works once: continuing uses it up and opens a session of at most an hour in this tab.</p>
      <button type="submit" ref={button} onClick={onContinue}>
        Continue to the portal
      </button>
    </section>
  );
}
