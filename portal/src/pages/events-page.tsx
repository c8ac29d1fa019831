import { useEffect, useRef, useState } from 'preact/hooks';
import { ListView, type ListSpec } from '../components/list-view';
import { withQuery } from '../lib/api';
import { when } from '../lib/format';
import type { LogEvent } from '../lib/records';
import type { Location } from '../lib/router';
import { followEvents } from '../lib/sse';

/** Kept on screen from the live tail; older ones are in the log below. */
const TAIL_LENGTH = 50;

const EVENTS: ListSpec<LogEvent> = {
  title: 'Events',
  noun: 'events',
  route: 'events',
  apiPath: '/api/events/',
  filters: [
    { name: 'type', label: 'Type', kind: 'text', hint: 'A type (loan.repaid) or a prefix (credit_limit.*).' },
    { name: 'object', label: 'Object UID', kind: 'text', hint: 'The record the events are about, such as cl_demo_03_usd.' },
    { name: 'created_from', label: 'Entered the log from', kind: 'time' },
    { name: 'created_to', label: 'Entered the log to', kind: 'time' },
  ],
  orderBy: ['created_at'],
  columns: [
    { label: 'Type', cell: (e) => e.type },
    { label: 'Object', cell: (e) => e.data.object.uid ?? e.data.object.id ?? '—' },
    { label: 'Entered the log', cell: (e) => <time dateTime={e.created_at}>{when(e.created_at)}</time> },
    {
      label: 'JSON',
      cell: (e) => (
        <details>
          <summary>
            <span class="visually-hidden">{e.type} </span>
            {e.id}
          </summary>
          <pre>{JSON.stringify(e, null, 2)}</pre>
        </details>
      ),
    },
  ],
};

export function EventsPage({ location }: { location: Location }) {
  return <ListView spec={{ ...EVENTS, intro: <LiveTail location={location} /> }} location={location} />;
}

/** New events as they enter the log (the stream, with the list's type and object filters). */
function LiveTail({ location }: { location: Location }) {
  const [running, setRunning] = useState(false);
  const [status, setStatus] = useState('Live tail stopped.');
  const [events, setEvents] = useState<LogEvent[]>([]);
  const stop = useRef<(() => void) | null>(null);
  const filters = withQuery('', { type: location.query.get('type') ?? undefined, object: location.query.get('object') ?? undefined });
  useEffect(() => () => stop.current?.(), []);
  const toggle = () => {
    if (stop.current) {
      stop.current();
      stop.current = null;
      setRunning(false);
      return;
    }
    setRunning(true);
    stop.current = followEvents(
      filters,
      (frame) => {
        try {
          const event = JSON.parse(frame.data) as LogEvent;
          setEvents((previous) => [event, ...previous].slice(0, TAIL_LENGTH));
        } catch {
          // A frame that is not an event (none is sent): skipped.
        }
      },
      (state, problem) => {
        if (state === 'open') setStatus('Live tail running: new events appear below as they enter the log.');
        if (state === 'reconnecting') setStatus('Connection lost; reconnecting where it stopped…');
        if (state === 'stopped') {
          setStatus(problem ? `Live tail stopped: ${problem}` : 'Live tail stopped.');
          if (problem) {
            stop.current = null;
            setRunning(false);
          }
        }
      },
    );
  };
  return (
    <section class="tail" aria-labelledby="tail-title">
      <h2 id="tail-title">Live tail</h2>
      <p>
        <button type="button" onClick={toggle} aria-pressed={running}>
          {running ? 'Stop live tail' : 'Start live tail'}
        </button>{' '}
        <span role="status" aria-live="polite">
          {status}
        </span>
      </p>
      <div role="log" aria-label="Events received by the live tail" aria-live="polite">
      <ol class="tail-events">
        {events.map((event) => (
          <li key={event.id}>
            <details>
              <summary>
                <time dateTime={event.created_at}>{when(event.created_at)}</time> <strong>{event.type}</strong>{' '}
                {event.data.object.uid ?? event.data.object.id ?? ''}
              </summary>
              <pre>{JSON.stringify(event, null, 2)}</pre>
            </details>
          </li>
        ))}
      </ol>
      </div>
    </section>
  );
}
