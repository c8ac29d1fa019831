import { useLayoutEffect, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` whenever `key` changes (a page's API path, say); an answer for an older key is dropped. */
export function useLoad<T>(key: string | null, load: (signal: AbortSignal) => Promise<T>): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: key !== null });
  const [generation, setGeneration] = useState(0);
  // A layout effect starts the request right after the render, not a frame later (the first page is sooner).
  useLayoutEffect(() => {
    if (key === null) return;
    const controller = new AbortController();
    setState((previous) => ({ data: previous.data, loading: true }));
    load(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, loading: false }),
      (error: unknown) => {
        if (controller.signal.aborted) return;
        setState({ error: error instanceof Error ? error : new Error(String(error)), loading: false });
      },
    );
    return () => controller.abort();
    // `load` is a fresh closure each render; `key` names what it loads.
  }, [key, generation]);
  return { data: state.data, error: state.error, loading: state.loading, reload: () => setGeneration((n) => n + 1) };
}
