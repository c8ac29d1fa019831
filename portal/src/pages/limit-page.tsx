import { StepChart, type Point } from '../components/charts';
import { Pager } from '../components/pager';
import { LoadingStatus, ProblemAlert, ScrollTable } from '../components/status';
import { api, firstPages, withQuery, type Page } from '../lib/api';
import { money, percent, when } from '../lib/format';
import type { CreditLimit, LedgerEntry, LogEvent } from '../lib/records';
import { href, type Location } from '../lib/router';
import { useLoad } from '../lib/use-api';
import { EventRows } from './event-rows';

/** Entries read for the chart: 10 pages, so a chart costs at most 10 requests of the session's budget. */
const CHART_PAGES = 10;

/**
 * The balance after each entry, newest last, worked back from the limit's outstanding now:
 * before a drawdown the outstanding was lower by its amount, before a repayment higher.
 */
export function balanceSeries(limit: CreditLimit, newestFirst: readonly LedgerEntry[], now = Date.now()): Point[] {
  const points: Point[] = [{ t: now, v: limit.balance }];
  let outstanding = limit.outstanding;
  for (const entry of newestFirst) {
    points.push({ t: Date.parse(entry.at), v: limit.capacity - outstanding });
    outstanding += entry.kind === 'drawdown' ? -entry.amount : entry.amount;
  }
  if (newestFirst.length > 0) points.push({ t: Date.parse(newestFirst[newestFirst.length - 1]!.at) - 1, v: limit.capacity - outstanding });
  return points.reverse();
}

export function LimitPage({ uid, location }: { uid: string; location: Location }) {
  const path = `/api/limits/${encodeURIComponent(uid)}/`;
  const limit = useLoad(path, (signal) => api<CreditLimit>(path, { signal }));
  const entriesPath = withQuery(`${path}entries/`, { page: location.query.get('page') ?? undefined });
  const entries = useLoad(entriesPath, (signal) => api<Page<LedgerEntry>>(entriesPath, { signal }));
  const eventsPath = withQuery('/api/events/', { object: uid });
  const events = useLoad(eventsPath, (signal) => api<Page<LogEvent>>(eventsPath, { signal }));
  const chart = useLoad(limit.data ? `${path}chart` : null, (signal) => firstPages<LedgerEntry>(`${path}entries/?order_by=-at`, CHART_PAGES, signal));
  const l = limit.data;
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">Credit limit {uid}</h1>
      <LoadingStatus loading={limit.loading} />
      <ProblemAlert error={limit.error} />
      {l ? (
        <>
          <dl class="facts">
            <dt>Entity</dt>
            <dd>{l.entity}</dd>
            <dt>Currency</dt>
            <dd>{l.currency}</dd>
            <dt>Capacity</dt>
            <dd>{money(l.capacity, l.currency)}</dd>
            <dt>Outstanding</dt>
            <dd>{money(l.outstanding, l.currency)}</dd>
            <dt>Balance</dt>
            <dd>{money(l.balance, l.currency)}</dd>
            <dt>Rate</dt>
            <dd>{l.rate}</dd>
          </dl>
          <h2 id="utilization">Utilization</h2>
          <meter id="utilization-meter" min={0} max={l.capacity} value={l.outstanding} high={l.capacity * 0.9} optimum={0} aria-labelledby="utilization" aria-describedby="utilization-text" />
          <p id="utilization-text">
            {money(l.outstanding, l.currency)} outstanding of {money(l.capacity, l.currency)} ({percent(l.outstanding, l.capacity)} used);{' '}
            {money(l.balance, l.currency)} available.
          </p>
          <p>
            <a href={href('loans', { credit_limit: uid })}>Loans on this limit</a>
          </p>
          <h2>Balance over time</h2>
          <LoadingStatus loading={chart.loading} />
          <ProblemAlert error={chart.error} />
          {chart.data ? (
            <>
              <StepChart
                points={balanceSeries(l, chart.data.items)}
                ceiling={l.capacity}
                label={`Balance of ${uid} after each of its latest ${chart.data.items.length} entries, from ${money(l.capacity - l.outstanding, l.currency)} now; the top line is the capacity.`}
              />
              <p class="hint">
                The balance after each of the latest {chart.data.items.length} of {chart.data.count} entries, by when the money moved.
              </p>
            </>
          ) : null}
        </>
      ) : null}
      <h2>Ledger entries</h2>
      <LoadingStatus loading={entries.loading} done={entries.data ? `${entries.data.count} entries.` : undefined} />
      <ProblemAlert error={entries.error} />
      {entries.data ? (
        <>
          <ScrollTable label="Ledger entries, scrollable">
            <table class="records">
              <caption>Ledger entries of {uid}, newest recorded first</caption>
              <thead>
                <tr>
                  <th scope="col">Entry</th>
                  <th scope="col">Kind</th>
                  <th scope="col" class="num">Amount</th>
                  <th scope="col">Money moved</th>
                  <th scope="col">Reference</th>
                  <th scope="col">Loan</th>
                </tr>
              </thead>
              <tbody>
                {entries.data.items.map((entry) => (
                  <tr key={entry.id}>
                    <th scope="row">{entry.id}</th>
                    <td>{entry.kind}</td>
                    <td class="num">{money(entry.amount, l?.currency)}</td>
                    <td>
                      <time dateTime={entry.at}>{when(entry.at)}</time>
                    </td>
                    <td>{entry.reference ?? '—'}</td>
                    <td>{entry.loan ?? '—'}</td>
                  </tr>
                ))}
                {entries.data.items.length === 0 ? (
                  <tr>
                    <td colSpan={6}>No entries yet.</td>
                  </tr>
                ) : null}
              </tbody>
            </table>
          </ScrollTable>
          <Pager route={`limits/${uid}`} query={location.query} page={entries.data} label="Ledger entry pages" />
        </>
      ) : null}
      <h2>Events</h2>
      <ProblemAlert error={events.error} />
      {events.data ? <EventRows events={events.data.items} caption={`Latest events of ${uid} (${events.data.count} in all)`} /> : null}
      <p>
        <a href={href('events', { object: uid })}>All events of this limit</a>
      </p>
    </section>
  );
}
