/**
 * Vitest setup file (every config): any red run of a property can be replayed.
 *
 * Each test's properties run from one seed, drawn before the test (or read
 * from FC_SEED, to replay one). When a property fails, fast-check's own error
 * names its seed and path, and the reporter below also writes them to the
 * test's stderr. When the test fails any other way after a property ran — an
 * assertion after it, the answer-contract check of response-contract-hook.ts
 * (how `GET /api/methods/#` turned one PostgreSQL run red and passed alone),
 * a timeout — the seed is written then: `FC_SEED=<seed> npx vitest run <file> -t '<test>'`
 * runs the same values again.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { beforeEach, type TestContext } from 'vitest';

/** What the reporter saw fail in the current test: each property's seed and counterexample path. */
export interface PropertyFailure {
  readonly seed: number;
  readonly path: string;
  readonly message: string;
}

const REPLAY_SEED = process.env.FC_SEED;
const FAST_CHECK_DEFAULTS = fc.readConfigureGlobal();

let currentSeed = 0;
let failures: PropertyFailure[] = [];
let propertiesRun = 0;

/** The seed the current test's properties run from. */
export function seedOfCurrentTest(): number {
  return currentSeed;
}

/** The properties that failed so far in the current test. */
export function propertyFailuresOfCurrentTest(): readonly PropertyFailure[] {
  return failures;
}

/** How to run a test's properties again with the values that failed. */
export function replayLine(seed: number, context: Pick<TestContext, 'task'>): string {
  const file = context.task.file.name;
  return `fast-check seed ${seed}: replay with FC_SEED=${seed} npx vitest run ${file} -t ${JSON.stringify(context.task.name)}`;
}

function drawSeed(): number {
  if (REPLAY_SEED === undefined || REPLAY_SEED === '') return (Math.random() * 0x7fffffff) | 0;
  const seed = Number(REPLAY_SEED);
  if (!Number.isInteger(seed)) throw new Error(`FC_SEED must be an integer seed as a failed run printed it, got ${JSON.stringify(REPLAY_SEED)}`);
  return seed;
}

beforeEach((context) => {
  const seed = drawSeed();
  currentSeed = seed;
  failures = [];
  propertiesRun = 0;
  fc.configureGlobal({
    ...FAST_CHECK_DEFAULTS,
    seed,
    // Sync only: an asyncReporter would make fc.assert of a sync property return an unchecked promise.
    reporter(details) {
      propertiesRun += 1;
      if (!details.failed) return;
      const message = fc.defaultReportMessage(details);
      failures.push({ seed: details.seed, path: details.counterexamplePath ?? '', message });
      console.error(`property failed in ${JSON.stringify(context.task.name)}, seed ${details.seed}, path "${details.counterexamplePath ?? ''}"\n${replayLine(details.seed, context)}`);
      // As fast-check's own reporter: its message (seed, path, counterexample), the predicate's error as the cause.
      throw new Error(message, { cause: details.errorInstance });
    },
  });
  context.onTestFailed(() => {
    // A property's own failure was reported above; this is for a test that failed some other way, after a property
    // ran or while one ran (a timeout: no report yet, so any failing test of a file that uses fast-check).
    if (failures.length === 0 && (propertiesRun > 0 || usesFastCheck(context.task.file.filepath))) console.error(replayLine(seed, context));
  });
});

function usesFastCheck(file: string | undefined): boolean {
  try {
    return file !== undefined && readFileSync(file, 'utf8').includes("from 'fast-check'");
  } catch {
    return true;
  }
}
