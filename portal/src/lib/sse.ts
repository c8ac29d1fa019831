import { authorization } from './api';

export interface StreamedEvent {
  id: string;
  type: string;
  data: string;
}

/**
 * Follows `GET /api/events/stream/` (SSE). EventSource cannot send an Authorization header, so
 * this reads the answer with fetch and a ReadableStream, parses the frames, and reconnects
 * after a dropped connection with `Last-Event-ID` (the last id seen), waiting `retry` ms.
 */
export function followEvents(
  query: string,
  onEvent: (event: StreamedEvent) => void,
  onStatus: (status: 'open' | 'reconnecting' | 'stopped', problem?: string) => void,
): () => void {
  const controller = new AbortController();
  let lastEventId: string | null = null;
  let retryMs = 1000;

  const connect = async (): Promise<void> => {
    while (!controller.signal.aborted) {
      try {
        const headers: Record<string, string> = { Accept: 'text/event-stream', ...authorization() };
        if (lastEventId) headers['Last-Event-ID'] = lastEventId;
        const response = await fetch(`/api/events/stream/${query}`, { headers, signal: controller.signal, credentials: 'omit' });
        if (!response.ok || !response.body) {
          const problem = (await response.json().catch(() => ({}))) as { detail?: string };
          // 4xx will not mend by retrying (a revoked session, a bad filter): stop and say why.
          if (response.status >= 400 && response.status < 500 && response.status !== 429) {
            onStatus('stopped', problem.detail ?? `The stream was refused (${response.status}).`);
            return;
          }
          throw new Error(problem.detail ?? `status ${response.status}`);
        }
        onStatus('open');
        await readFrames(response.body, (frame) => {
          if (frame.retry !== undefined) retryMs = frame.retry;
          if (frame.id !== undefined) lastEventId = frame.id;
          if (frame.data !== undefined && frame.id) onEvent({ id: frame.id, type: frame.event ?? 'message', data: frame.data });
        });
      } catch (error) {
        if (controller.signal.aborted) return;
        void error;
      }
      if (controller.signal.aborted) return;
      onStatus('reconnecting');
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  };
  void connect();
  return () => {
    controller.abort();
    onStatus('stopped');
  };
}

interface Frame {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
}

/** Parses the SSE wire format (a frame ends at a blank line; `:` lines are comments). */
export async function readFrames(body: ReadableStream<Uint8Array>, onFrame: (frame: Frame) => void): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>).getReader();
  let buffer = '';
  let frame: Frame = {};
  let data: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) frame.data = data.join('\n');
        if (Object.keys(frame).length > 0) onFrame(frame);
        frame = {};
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') data.push(text);
      else if (field === 'id') frame.id = text;
      else if (field === 'event') frame.event = text;
      else if (field === 'retry' && /^\d+$/.test(text)) frame.retry = Number(text);
    }
  }
}
