import { defineConfig } from 'vitest/config';
import { SlowFilesFirst } from './test/helpers/slow-files-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds the migrated PGlite template every test store is copied from.
    globalSetup: ['test/helpers/pglite-template.ts'],
    // Checks every answer the tests receive against openapi.json (the test that got an undeclared one fails);
    // runs each test's properties from a seed it prints when the test fails (FC_SEED replays it).
    setupFiles: ['test/helpers/response-contract-hook.ts', 'test/helpers/fast-check-seed.ts'],
    // Timeouts catch hangs; they are not speed limits. A test that takes 3 s on
    // an idle 2-core machine takes ten times that beside other work, and must
    // not turn red for it (a hang still fails, only later).
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // PGlite runs WebAssembly on the main thread; two cores, so keep the pool small.
    maxWorkers: 2,
    sequence: { sequencer: SlowFilesFirst },
    // V8's background re-optimization of PGlite's WebAssembly costs more CPU than the tests' queries gain
    // from it (about a quarter of a PGlite-heavy file's CPU when each file had a fresh worker). Behaviour
    // is the same; spawned servers keep the default.
    execArgv: ['--liftoff-only'],
    // The files of a worker share its process and modules instead of a fresh worker per file: PGlite's
    // WebAssembly, the sources and the test template are compiled and loaded once per worker, not once
    // per file. No file mocks modules, stubs globals or leaves state that another file reads.
    isolate: false,
    // Every embedded store the tests open, in-process or in a spawned CLI, is small and short-lived:
    // 16MB of shared buffers start in about half the CPU of PGlite's 128MB default.
    env: { PGLITE_SHARED_BUFFERS: '16MB' },
  },
});
