import type { ImportProgress } from '../import/index.js';

const REDRAW_MS = 200;

/**
 * A one-line progress display for a terminal: lines read, rate and, when the
 * input size is known, percentage and ETA. Redrawn at most five times a
 * second; `done` clears it so the summary starts on a clean line.
 */
export function terminalProgress(stream: NodeJS.WriteStream, totalBytes: number | undefined) {
  const started = Date.now();
  let lastDraw = 0;
  const draw = (text: string) => stream.write(`\r\x1b[K${text}`);
  return {
    onProgress(progress: ImportProgress): void {
      const now = Date.now();
      if (progress.phase === 'reading' && now - lastDraw < REDRAW_MS) return;
      lastDraw = now;
      const seconds = Math.max((now - started) / 1000, 0.001);
      const rate = progress.lines / seconds;
      if (progress.phase === 'merging') {
        draw(`read ${formatCount(progress.lines)} lines in ${seconds.toFixed(1)}s; merging into the database…`);
        return;
      }
      if (progress.phase === 'done') return;
      let text = `read ${formatCount(progress.lines)} lines · ${formatCount(Math.round(rate))} lines/s`;
      if (totalBytes && progress.bytes > 0) {
        const fraction = Math.min(progress.bytes / totalBytes, 1);
        const eta = (seconds / fraction) * (1 - fraction);
        text += ` · ${(fraction * 100).toFixed(0)}% · ETA ${formatDuration(eta)}`;
      }
      draw(text);
    },
    done(): void {
      stream.write('\r\x1b[K');
    },
  };
}

function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}
