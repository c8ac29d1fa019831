import { describe, expect, it } from 'vitest';
import { EndpointWindows, REMEMBERED_ENDPOINTS } from '../../src/webhooks/endpoint-windows.js';

const fast = { ok: true, status: 204, failure: null, durationMs: 5 } as const;
const slow = { ok: true, status: 200, failure: null, durationMs: 2000 } as const;
const timeout = { ok: false, status: null, failure: 'timeout', durationMs: 10_000 } as const;
const refused = { ok: false, status: null, failure: 'network', durationMs: 1 } as const;
const answered500 = { ok: false, status: 500, failure: 'http_status', durationMs: 3 } as const;
const slow503 = { ok: false, status: 503, failure: 'http_status', durationMs: 4000 } as const;

describe('EndpointWindows', () => {
  const windows = () => new EndpointWindows({ initial: 4, max: 6, fastMs: 250 });

  it('opens an endpoint by one attempt per fast 2xx, up to the most', () => {
    const w = windows();
    expect(w.windowOf('1')).toBe(4);
    w.answered('1', fast);
    expect(w.windowOf('1')).toBe(5);
    for (let i = 0; i < 10; i += 1) w.answered('1', fast);
    expect(w.windowOf('1')).toBe(6);
    expect(w.windowOf('2')).toBe(4);
  });

  it('halves it on a timeout or a failed connection, never below one', () => {
    const w = windows();
    w.answered('1', timeout);
    expect(w.windowOf('1')).toBe(2);
    w.answered('1', refused);
    expect(w.windowOf('1')).toBe(1);
    w.answered('1', timeout);
    expect(w.windowOf('1')).toBe(1);
  });

  it('gives an endpoint that answers again, fast or slow, the window it had before timeouts cut it', () => {
    const w = windows();
    w.answered('slow', fast);
    w.answered('slow', fast);
    expect(w.windowOf('slow')).toBe(6);
    for (let i = 0; i < 4; i += 1) w.answered('slow', timeout);
    expect(w.windowOf('slow')).toBe(1);
    // A black hole that now answers in 2 s: its 6 back at once, not one more per fast answer (it has none).
    w.answered('slow', slow);
    expect(w.windowOf('slow')).toBe(6);

    w.answered('fast', timeout);
    w.answered('fast', refused);
    w.answered('fast', fast);
    expect(w.windowOf('fast')).toBe(5);

    // Any answer shows it is no black hole, even an error status.
    w.answered('erring', timeout);
    w.answered('erring', timeout);
    w.answered('erring', slow503);
    expect(w.windowOf('erring')).toBe(4);
  });

  it('leaves it where it was after a slow 2xx or an error the receiver answered', () => {
    const w = windows();
    w.answered('1', slow);
    w.answered('1', answered500);
    expect(w.windowOf('1')).toBe(4);
  });

  it('forgets the endpoints heard from least recently beyond the ones it remembers', () => {
    const w = windows();
    w.answered('first', timeout);
    for (let i = 0; i < REMEMBERED_ENDPOINTS; i += 1) w.answered(`e${i}`, timeout);
    expect(w.windowOf('first')).toBe(4);
    expect(w.windowOf(`e${REMEMBERED_ENDPOINTS - 1}`)).toBe(2);
  });
});
