import { useState } from 'preact/hooks';

/** A signing secret shown once (create, rotation), with a copy button; it is not kept anywhere. */
export function SecretReveal({ secret, onDismiss }: { secret: string; onDismiss: () => void }) {
  const [copied, setCopied] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('The browser refused the clipboard: select the secret and copy it.');
    }
  };
  return (
    <div class="secret" role="region" aria-label="Signing secret, shown once">
      <p>
        <strong>The signing secret, shown this once.</strong> Store it with your receiver now: the service cannot show it again (rotate it if it
        is lost).
      </p>
      <p>
        <code id="secret-value" class="secret-value">
          {secret}
        </code>
      </p>
      <p>
        <button type="button" onClick={copy} aria-describedby="secret-value">
          Copy the secret
        </button>{' '}
        <button type="button" onClick={onDismiss}>
          I have stored it
        </button>{' '}
        <span role="status" aria-live="polite">
          {copied}
        </span>
      </p>
    </div>
  );
}
