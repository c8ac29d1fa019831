import { when } from '../lib/format';
import type { EndpointHealth } from '../lib/records';
import { OutcomeBar } from './charts';

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
