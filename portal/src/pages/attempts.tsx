import type { TargetedSubmitEvent } from 'preact';
import { useState } from 'preact/hooks';
import { LoadingStatus, Notice, ProblemAlert, ScrollTable } from '../components/status';
import { api, type Page } from '../lib/api';
import { when } from '../lib/format';
import type { DeliveryAttempt } from '../lib/records';
import { href, navigate, type Location } from '../lib/router';
import { useLoad } from '../lib/use-api';

export function succeeded(attempt: DeliveryAttempt): boolean {
  return attempt.status_code !== null && attempt.status_code >= 200 && attempt.status_code < 300;
}

/**
 * The API's query for the portal's: `status` and `type` as the list takes them (the
 * server filters and counts), `page` only past the first.
 */
function apiQuery(query: URLSearchParams): string {
  const params = new URLSearchParams();
  for (const name of ['status', 'type', 'page']) {
    const value = query.get(name);
    if (value) params.set(name, value);
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

export function Attempts({ endpoint, location }: { endpoint: string; location: Location }) {
  const query = location.query;
  const failedOnly = query.get('status') === 'failed';
  const type = query.get('type') ?? '';
  const from = Math.max(1, Number(query.get('page') ?? '1') || 1);
  const filtered = failedOnly || type !== '';
  const result = useLoad(`${endpoint}|${location.search}`, (signal) =>
    api<Page<DeliveryAttempt>>(`/api/webhook_endpoints/${encodeURIComponent(endpoint)}/deliveries/${apiQuery(query)}`, { signal }),
  );
  const [resent, setResent] = useState('');
  const [problem, setProblem] = useState<Error | undefined>();
  const route = `webhooks/${endpoint}`;
  const onFilter = (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    navigate(href(route, { status: data.get('failed') ? 'failed' : undefined, type: String(data.get('type') ?? '').trim() || undefined }));
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
      <LoadingStatus loading={result.loading} done={data ? `${data.items.length} attempts shown of ${data.count} ${filtered ? 'matching' : 'in all'}.` : undefined} />
      <ProblemAlert error={result.error ?? problem} />
      {resent ? <Notice>{resent}</Notice> : null}
      {data ? (
        <>
          <ScrollTable label="Delivery attempts, scrollable">
            <table class="records">
              <caption>
                Attempts {filtered ? `matching the filters, page ${from} of ${data.count} matching` : `page ${from} of ${data.count} in all`}, newest first
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
                {data.items.map((attempt) => (
                  <tr key={attempt.id}>
                    <th scope="row">{attempt.event}</th>
                    <td>{attempt.event_type ?? 'unknown (pruned from the log)'}</td>
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
                {data.items.length === 0 ? (
                  <tr>
                    <td colSpan={7}>No attempts {filtered ? 'match' : 'yet'}.</td>
                  </tr>
                ) : null}
              </tbody>
            </table>
          </ScrollTable>
          <nav class="pager" aria-label="Attempt pages">
            <ul>
              <li>{data.previous ? <a href={href(route, pageQuery(query, from - 1))}>Newer</a> : <span aria-disabled="true">Newer</span>}</li>
              <li>{data.next ? <a href={href(route, pageQuery(query, from + 1))}>Older</a> : <span aria-disabled="true">Older</span>}</li>
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
