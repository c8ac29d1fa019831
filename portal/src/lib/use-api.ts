import { useLayoutEffect, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` whenever `key` changes (a page's API path, say); an answer for an older key is dropped. */
export function useLoad<T>(key: string | null, load: (signal: AbortSignal) => Promise<T>): Loaded<T> {
  // The answer is kept with the key it answers: another key's is never shown as this one's (a new
  // query's page would otherwise show the last query's records, and their paging links, until it loads).
  const [state, setState] = useState<{ key?: string; data?: T; error?: Error; loading: boolean }>({ loading: key !== null });
  const [generation, setGeneration] = useState(0);
  // A layout effect starts the request right after the render, not a frame later (the first page is sooner).
  useLayoutEffect(() => {
    if (key === null) return;
    const controller = new AbortController();
    // A reload of the same key keeps its records on screen while it runs.
    setState((previous) => (previous.key === key ? { key, data: previous.data, loading: true } : { loading: true }));
    load(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ key, data, loading: false }),
      (error: unknown) => {
        if (controller.signal.aborted) return;
        setState({ key, error: error instanceof Error ? error : new Error(String(error)), loading: false });
      },
    );
    return () => controller.abort();
    // `load` is a fresh closure each render; `key` names what it loads.
  }, [key, generation]);
  const current = state.key === key;
  return {
    data: current ? state.data : undefined,
    error: current ? state.error : undefined,
    loading: state.loading || (!current && key !== null),
    reload: () => setGeneration((n) => n + 1),
  };
}
