import type { HourOfAttempts } from '../lib/records';

/**
 * Charts drawn as SVG by hand: a few dozen lines instead of a library (nothing to load,
 * nothing that evaluates code, colours from the stylesheet). Each has its numbers in text too.
 */
export interface Point {
  t: number;
  v: number;
}

/** A step line of a value over time (a credit limit's balance after each entry). */
export function StepChart({ points, label, floor = 0, ceiling }: { points: Point[]; label: string; floor?: number; ceiling?: number }) {
  const width = 600;
  const height = 180;
  const pad = 8;
  if (points.length < 2) return <p>Not enough entries to draw a chart.</p>;
  const t0 = points[0]!.t;
  const t1 = points[points.length - 1]!.t;
  const top = Math.max(ceiling ?? 0, ...points.map((p) => p.v));
  const bottom = Math.min(floor, ...points.map((p) => p.v));
  const x = (t: number) => pad + ((t - t0) / Math.max(1, t1 - t0)) * (width - 2 * pad);
  const y = (v: number) => height - pad - ((v - bottom) / Math.max(1e-9, top - bottom)) * (height - 2 * pad);
  let path = `M${x(points[0]!.t).toFixed(1)},${y(points[0]!.v).toFixed(1)}`;
  for (const point of points.slice(1)) path += `H${x(point.t).toFixed(1)}V${y(point.v).toFixed(1)}`;
  return (
    <svg class="chart" viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label} preserveAspectRatio="none">
      <line class="chart-axis" x1={pad} x2={width - pad} y1={y(bottom)} y2={y(bottom)} />
      {ceiling !== undefined ? <line class="chart-ceiling" x1={pad} x2={width - pad} y1={y(ceiling)} y2={y(ceiling)} /> : null}
      <path class="chart-line" d={path} fill="none" />
    </svg>
  );
}

/** Succeeded against failed as one stacked bar (an endpoint's last 24 hours). */
export function OutcomeBar({ succeeded, failed, label }: { succeeded: number; failed: number; label: string }) {
  const total = succeeded + failed;
  const width = 120;
  const ok = total === 0 ? 0 : Math.round((succeeded / total) * width);
  return (
    <svg class="outcome-bar" viewBox={`0 0 ${width} 12`} width={width} height={12} role="img" aria-label={label}>
      <rect class={total === 0 ? 'bar-empty' : 'bar-failed'} x={0} y={0} width={width} height={12} />
      {ok > 0 ? <rect class="bar-ok" x={0} y={0} width={ok} height={12} /> : null}
    </svg>
  );
}

/** An endpoint's attempts by hour as stacked bars (succeeded under failed), oldest on the left. */
export function HourlyBars({ hours, label }: { hours: HourOfAttempts[]; label: string }) {
  const width = 240;
  const height = 48;
  const slot = width / Math.max(1, hours.length);
  const top = Math.max(1, ...hours.map((hour) => hour.succeeded + hour.failed));
  const scale = (n: number) => (n / top) * height;
  return (
    <svg class="hourly-bars" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={label}>
      <line class="chart-axis" x1={0} x2={width} y1={height - 0.5} y2={height - 0.5} />
      {hours.map((hour, index) => {
        const ok = scale(hour.succeeded);
        const failed = scale(hour.failed);
        const x = index * slot + 1;
        return (
          <g key={hour.hour}>
            {ok > 0 ? <rect class="bar-ok" x={x} y={height - ok} width={slot - 2} height={ok} /> : null}
            {failed > 0 ? <rect class="bar-failed" x={x} y={height - ok - failed} width={slot - 2} height={failed} /> : null}
          </g>
        );
      })}
    </svg>
  );
}
