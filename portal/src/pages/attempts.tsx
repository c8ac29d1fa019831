import type { TargetedSubmitEvent } from 'preact';
import { useState } from 'preact/hooks';
import { LoadingStatus, Notice, ProblemAlert, ScrollTable } from '../components/status';
import { api, type Page } from '../lib/api';
import { when } from '../lib/format';
import type { DeliveryAttempt, LogEvent } from '../lib/records';
import { href, navigate, type Location } from '../lib/router';
import { useLoad } from '../lib/use-api';

/** Pages of attempts read for one screen of filtered ones (each a request of the session's budget). */
const SCAN_PAGES = 3;

export function succeeded(attempt: DeliveryAttempt): boolean {
  return attempt.status_code !== null && attempt.status_code >= 200 && attempt.status_code < 300;
}

interface Scan {
  attempts: (DeliveryAttempt & { type: string })[];
  count: number;
  lastPage: number;
  more: boolean;
}

/**
 * The endpoint's delivery attempts, newest first. The API pages them by number only; the
 * filters (failed only, event type) are applied here to the pages read, each attempt's type
 * read from its event (once per event).
 */
async function scan(endpoint: string, from: number, failedOnly: boolean, type: string, signal: AbortSignal): Promise<Scan> {
  const types = new Map<string, string>();
  const attempts: Scan['attempts'] = [];
  let page = from;
  let count = 0;
  let more = true;
  for (let read = 0; read < (failedOnly || type ? SCAN_PAGES : 1) && more && attempts.length < 10; read += 1, page += 1) {
    const answer = await api<Page<DeliveryAttempt>>(`/api/webhook_endpoints/${encodeURIComponent(endpoint)}/deliveries/?page=${page}`, { signal });
    count = answer.count;
    more = answer.next !== null;
    for (const attempt of answer.items) {
      if (failedOnly && succeeded(attempt)) continue;
      let eventType = attempt.event_type ?? types.get(attempt.event);
      if (eventType === undefined) {
        eventType = await api<LogEvent>(`/api/events/${encodeURIComponent(attempt.event)}/`, { signal }).then(
          (event) => event.type,
          () => 'unknown (pruned from the log)',
        );
        types.set(attempt.event, eventType);
      }
      if (type && !(type.endsWith('*') ? eventType.startsWith(type.slice(0, -1)) : eventType === type)) continue;
      attempts.push({ ...attempt, type: eventType });
    }
  }
  return { attempts, count, lastPage: page - 1, more };
}

export function Attempts({ endpoint, location }: { endpoint: string; location: Location }) {
  const query = location.query;
  const failedOnly = query.get('failed') === '1';
  const type = query.get('type') ?? '';
  const from = Math.max(1, Number(query.get('page') ?? '1') || 1);
  const result = useLoad(`${endpoint}|${location.search}`, (signal) => scan(endpoint, from, failedOnly, type, signal));
  const [resent, setResent] = useState('');
  const [problem, setProblem] = useState<Error | undefined>();
  const route = `webhooks/${endpoint}`;
  const onFilter = (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    navigate(href(route, { failed: data.get('failed') ? '1' : undefined, type: String(data.get('type') ?? '').trim() || undefined }));
  };
  const resend = async (event: string) => {
    setProblem(undefined);
    try {
      await api(`/api/events/${encodeURIComponent(event)}/resend/`, { method: 'POST', body: { endpoint } });
      setResent(`Event ${event} queued for this endpoint again.`);
      result.reload();
    } catch (error) {
      setProblem(error instanceof Error ? error : new Error(String(error)));
    }
  };
  const data = result.data;
  return (
    <section aria-labelledby="attempts-title">
      <h2 id="attempts-title">Delivery attempts</h2>
      <form class="filters" onSubmit={onFilter} aria-label="Filter attempts" key={location.search}>
        <div class="field check">
          <input type="checkbox" id="attempts-failed" name="failed" value="1" defaultChecked={failedOnly} />
          <label for="attempts-failed">Failed only</label>
        </div>
        <div class="field">
          <label for="attempts-type">Event type</label>
          <input id="attempts-type" name="type" type="text" defaultValue={type} aria-describedby="attempts-type-hint" autocomplete="off" />
          <small id="attempts-type-hint" class="hint">
            A type (loan.created) or a prefix (credit_limit.*).
          </small>
        </div>
        <div class="actions">
          <button type="submit">Apply</button>
        </div>
      </form>
      <LoadingStatus loading={result.loading} done={data ? `${data.attempts.length} attempts shown of ${data.count} in all.` : undefined} />
      <ProblemAlert error={result.error ?? problem} />
      {resent ? <Notice>{resent}</Notice> : null}
      {data ? (
        <>
          <ScrollTable label="Delivery attempts, scrollable">
            <table class="records">
              <caption>
                Attempts {failedOnly || type ? `matching the filters on pages ${from}–${data.lastPage}` : `page ${from}`} of {data.count} in all, newest first
              </caption>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Type</th>
                  <th scope="col">Attempt</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Made</th>
                  <th scope="col">Next attempt</th>
                  <th scope="col">Resend</th>
                </tr>
              </thead>
              <tbody>
                {data.attempts.map((attempt) => (
                  <tr key={attempt.id}>
                    <th scope="row">{attempt.event}</th>
                    <td>{attempt.type}</td>
                    <td class="num">{attempt.attempt}</td>
                    <td class={succeeded(attempt) ? 'ok' : 'failed'}>
                      {succeeded(attempt) ? 'delivered' : 'failed'}: {attempt.status_code ?? attempt.error ?? 'no answer'}
                      {attempt.error && attempt.status_code !== null ? ` (${attempt.error})` : ''}
                    </td>
                    <td>
                      <time dateTime={attempt.created_at}>{when(attempt.created_at)}</time>
                    </td>
                    <td>{when(attempt.next_attempt_at)}</td>
                    <td>
                      <button type="button" onClick={() => void resend(attempt.event)} aria-label={`Resend event ${attempt.event}`}>
                        Resend
                      </button>
                    </td>
                  </tr>
                ))}
                {data.attempts.length === 0 ? (
                  <tr>
                    <td colSpan={7}>No attempts {failedOnly || type ? 'match' : 'yet'}.</td>
                  </tr>
                ) : null}
              </tbody>
            </table>
          </ScrollTable>
          <nav class="pager" aria-label="Attempt pages">
            <ul>
              <li>{from > 1 ? <a href={href(route, pageQuery(query, Math.max(1, from - (data.lastPage - from + 1))))}>Newer</a> : <span aria-disabled="true">Newer</span>}</li>
              <li>{data.more ? <a href={href(route, pageQuery(query, data.lastPage + 1))}>Older</a> : <span aria-disabled="true">Older</span>}</li>
            </ul>
          </nav>
        </>
      ) : null}
    </section>
  );
}

function pageQuery(query: URLSearchParams, page: number): URLSearchParams {
  const next = new URLSearchParams(query);
  next.set('page', String(page));
  return next;
}
