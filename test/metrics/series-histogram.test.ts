import fc from 'fast-check';
import { AggregatorRegistry, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SeriesHistogram } from '../../src/metrics/series-histogram.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const labelNames = ['method', 'route', 'status'] as const;
type Label = (typeof labelNames)[number];
const config = { name: 'request_seconds', help: 'How long requests took', labelNames, buckets: BUCKETS };

const observation = fc.record({
  labels: fc.record({ method: fc.constantFrom('GET', 'POST'), route: fc.constantFrom('/a/', '/b/:uid/', 'unmatched'), status: fc.constantFrom('200', '404') }),
  // Bucket bounds themselves, values between them, above the last, and zero.
  value: fc.oneof(fc.constantFrom(0, ...BUCKETS), fc.double({ min: 0, max: 20, noNaN: true })),
});

/** prom-client's own histogram and a SeriesHistogram, each in a registry of its own, fed the same observations. */
function both(observations: readonly { labels: Record<Label, string>; value: number }[]) {
  const reference = new Registry();
  const referenceHistogram = new Histogram({ ...config, registers: [reference] });
  const registry = new Registry();
  const histogram = new SeriesHistogram({ ...config, registers: [registry] });
  for (const { labels, value } of observations) {
    referenceHistogram.observe(labels, value);
    histogram.record(histogram.series(labels), value);
  }
  return { reference, referenceHistogram, registry, histogram };
}

describe('SeriesHistogram', () => {
  it('scrapes as the same text as prom-client’s histogram fed the same observations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 200 }), async (observations) => {
        const { reference, registry } = both(observations);
        expect(await registry.metrics()).toBe(await reference.metrics());
      }),
      { numRuns: 100 },
    );
  });

  it('gives the cluster’s aggregation the same JSON values, so workers sum into the same histogram', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 100 }), fc.array(observation, { maxLength: 100 }), async (first, second) => {
        const a = both(first);
        const b = both(second);
        const expected = AggregatorRegistry.aggregate([await a.reference.getMetricsAsJSON(), await b.reference.getMetricsAsJSON()]);
        const actual = AggregatorRegistry.aggregate([await a.registry.getMetricsAsJSON(), await b.registry.getMetricsAsJSON()]);
        expect(await actual.metrics()).toBe(await expected.metrics());
      }),
      { numRuns: 50 },
    );
  });

  it('counts from zero again after a reset, in the series its callers hold', async () => {
    const { registry, histogram, reference, referenceHistogram } = both([{ labels: { method: 'GET', route: '/a/', status: '200' }, value: 0.02 }]);
    const held = histogram.series({ method: 'GET', route: '/a/', status: '200' });
    registry.resetMetrics();
    reference.resetMetrics();
    histogram.record(held, 3);
    referenceHistogram.observe({ method: 'GET', route: '/a/', status: '200' }, 3);
    expect(await registry.metrics()).toBe(await reference.metrics());
    expect(await registry.metrics()).toContain('request_seconds_count{method="GET",route="/a/",status="200"} 1');
  });
});
