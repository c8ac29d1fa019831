import { defineConfig } from 'vitest/config';
import suite from '../../../vitest.config.js';

// test/property-seeds.test.ts runs these failing tests in a vitest of their own, with the suite's setup files.
export default defineConfig({
  test: {
    include: ['test/helpers/property-seed-fixture/*.fixture.ts'],
    setupFiles: suite.test?.setupFiles ?? [],
    pool: 'threads',
    maxWorkers: 1,
  },
});
