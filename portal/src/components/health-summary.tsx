import { when } from '../lib/format';
import type { EndpointHealth, HourOfAttempts } from '../lib/records';
import { HourlyBars, OutcomeBar } from './charts';

export type HealthState = 'healthy' | 'failing' | 'idle' | 'disabled';

export function healthState(health: EndpointHealth, disabled: boolean): HealthState {
  if (disabled) return 'disabled';
  if (health.failing_since) return 'failing';
  if (!health.last_attempt_at) return 'idle';
  return 'healthy';
}

const WORDS: Record<HealthState, string> = { healthy: 'Healthy', failing: 'Failing', idle: 'No attempts yet', disabled: 'Disabled' };

/** An endpoint's health at a glance: a word with its colour, the 24-hour outcomes as a bar, and the times. */
export function HealthBadge({ health, disabled }: { health: EndpointHealth; disabled: boolean }) {
  const state = healthState(health, disabled);
  return <span class={`badge badge-${state}`}>{WORDS[state]}</span>;
}

export function HealthSummary({ health, disabled, compact = false }: { health: EndpointHealth; disabled: boolean; compact?: boolean }) {
  const total = health.succeeded_24h + health.failed_24h;
  const words = `${health.succeeded_24h} succeeded, ${health.failed_24h} failed in 24 h`;
  return (
    <div class="health">
      <HealthBadge health={health} disabled={disabled} /> <OutcomeBar succeeded={health.succeeded_24h} failed={health.failed_24h} label={`Attempts in 24 hours: ${words}`} />{' '}
      <span>{total === 0 ? 'no attempts in 24 h' : words}</span>
      {compact ? null : <HourlyChart hours={health.hourly_24h} />}
      {compact ? null : (
        <dl class="facts">
          <dt>Last success</dt>
          <dd>{when(health.last_success_at)}</dd>
          <dt>Failing since</dt>
          <dd>{health.failing_since ? when(health.failing_since) : 'not failing'}</dd>
          <dt>Pending deliveries</dt>
          <dd>{health.pending}</dd>
          <dt>Last attempt</dt>
          <dd>{when(health.last_attempt_at)}</dd>
        </dl>
      )}
      {compact && health.failing_since ? <span> · failing since {when(health.failing_since)}</span> : null}
      {compact ? <span> · {health.pending} pending</span> : null}
    </div>
  );
}

/** The 24 hours as bars, with the same numbers as a table for those who do not see the chart. */
function HourlyChart({ hours }: { hours: HourOfAttempts[] }) {
  const busiest = hours.reduce<HourOfAttempts | undefined>((best, hour) => (!best || hour.succeeded + hour.failed > best.succeeded + best.failed ? hour : best), undefined);
  const failing = hours.filter((hour) => hour.failed > 0).length;
  const summary =
    busiest && busiest.succeeded + busiest.failed > 0
      ? `Attempts by hour, last 24 hours: busiest ${hourLabel(busiest.hour)} UTC with ${busiest.succeeded + busiest.failed}; ${failing} ${failing === 1 ? 'hour' : 'hours'} with failures`
      : 'Attempts by hour, last 24 hours: none';
  return (
    <figure class="hourly">
      <HourlyBars hours={hours} label={summary} />
      <figcaption>{summary}</figcaption>
      <details>
        <summary>Attempts by hour as a table</summary>
        <table class="records">
          <caption>Attempts by hour (UTC), oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Hour</th>
              <th scope="col">Succeeded</th>
              <th scope="col">Failed</th>
            </tr>
          </thead>
          <tbody>
            {hours.map((hour) => (
              <tr key={hour.hour}>
                <th scope="row">
                  <time dateTime={hour.hour}>{hourLabel(hour.hour)}</time>
                </th>
                <td class="num">{hour.succeeded}</td>
                <td class="num">{hour.failed}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

/** `2026-11-28T04:00:00Z` → `11-28 04:00`. */
function hourLabel(hour: string): string {
  return `${hour.slice(5, 10)} ${hour.slice(11, 16)}`;
}
