import type { ComponentChildren } from 'preact';

/** The API's problem `detail`, in words, in an alert region (announced at once). */
export function ProblemAlert({ error, title }: { error: Error | undefined | null; title?: string }) {
  if (!error) return null;
  return (
    <div role="alert" class="alert">
      {title ? <strong>{title}: </strong> : null}
      {error.message}
    </div>
  );
}

/** A polite live region: says "Loading…" while `loading`, then what `done` says. */
export function LoadingStatus({ loading, done }: { loading: boolean; done?: string }) {
  return (
    <p class="status" role="status" aria-live="polite">
      {loading ? 'Loading…' : (done ?? '')}
    </p>
  );
}

/** A table in a region that scrolls sideways on a narrow screen, reachable and named for the keyboard. */
export function ScrollTable({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="table-scroll" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <div role="status" aria-live="polite" class="notice">
      {children}
    </div>
  );
}
