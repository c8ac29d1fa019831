import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';

// Run only by test/property-seeds.test.ts, which expects each of these to fail and to print its seed.
it('fails inside a property', async () => {
  await fc.assert(
    // Fails on every value, so on every seed (a value hit by chance — n % 97 === 3 — was missed by a third of the
    // seeds); the counterexample still shrinks, so the printed path is a real one.
    fc.asyncProperty(fc.integer({ min: 0, max: 1_000_000 }), async (n) => {
      expect(n).toBeGreaterThan(1_000_000);
    }),
  );
});

it('fails after its property passed', () => {
  let largest = -1;
  fc.assert(fc.property(fc.nat(), (n) => void (largest = Math.max(largest, n))));
  expect(largest, 'an assertion after the property').toBe(-1);
});

describe('a hook that fails after the property passed', () => {
  // As the answer-contract check (response-contract-hook.ts) does after a test that received an undeclared answer.
  afterEach(() => {
    throw new Error('the hook after the test failed');
  });

  it('ran a property that passed', () => {
    fc.assert(fc.property(fc.nat(), (n) => n >= 0));
  });
});
