import { ScrollTable } from '../components/status';
import { when } from '../lib/format';
import type { LogEvent } from '../lib/records';

/** Events as a table, each with its JSON in a disclosure. */
export function EventRows({ events, caption }: { events: readonly LogEvent[]; caption: string }) {
  return (
    <ScrollTable label={`${caption}, scrollable`}>
      <table class="records events">
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Object</th>
            <th scope="col">Entered the log</th>
            <th scope="col">JSON</th>
          </tr>
        </thead>
        <tbody>
          {events.map((event) => (
            <tr key={event.id}>
              <th scope="row">{event.type}</th>
              <td>{event.data.object.uid ?? event.data.object.id ?? '—'}</td>
              <td>
                <time dateTime={event.created_at}>{when(event.created_at)}</time>
              </td>
              <td>
                <details>
                  <summary>
                    <span class="visually-hidden">{event.type} </span>
                    {event.id}
                  </summary>
                  <pre>{JSON.stringify(event, null, 2)}</pre>
                </details>
              </td>
            </tr>
          ))}
          {events.length === 0 ? (
            <tr>
              <td colSpan={4}>No events.</td>
            </tr>
          ) : null}
        </tbody>
      </table>
    </ScrollTable>
  );
}
