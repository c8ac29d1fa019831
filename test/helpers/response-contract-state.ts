import { subscribe } from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { responseContractOfFile, type ObservedViolation } from './response-contract.js';

interface ProcessState {
  readonly violations: ObservedViolation[];
  /** Where spawned servers append theirs (CONTRACT_VIOLATIONS_FILE). */
  readonly file: string;
}

// Test files of a worker share its process (and may load this module more than once): install once.
const STATE = Symbol.for('lending-api.response-contract');
const processGlobal = globalThis as { [STATE]?: ProcessState };

function install(): ProcessState {
  const state: ProcessState = { violations: [], file: path.join(mkdtempSync(path.join(tmpdir(), 'lending-api-contract-')), 'violations.jsonl') };
  writeFileSync(state.file, '');
  const contract = responseContractOfFile((violation) => state.violations.push(violation));
  // Fastify announces every instance it creates: an app built anywhere in the process is watched from birth.
  subscribe('fastify.initialization', (message) => contract.watch((message as { fastify: FastifyInstance }).fastify));
  return state;
}

/** Starts checking this process's apps (once), and returns where violations gather. */
function processState(): ProcessState {
  return (processGlobal[STATE] ??= install());
}

/** Environment for a spawned server, so it checks its own answers and reports them to this process. */
export function contractCheckingEnv(): Record<string, string> {
  const hook = new URL('./response-contract-child.ts', import.meta.url).href;
  return {
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${import.meta.resolve('tsx')} --import ${hook}`.trim(),
    CONTRACT_VIOLATIONS_FILE: processState().file,
  };
}

/** Every violation seen since the last call, in this process and in the servers it spawned. */
export function takeViolations(): ObservedViolation[] {
  const state = processState();
  const spawned = readFileSync(state.file, 'utf8');
  writeFileSync(state.file, '');
  return [...state.violations.splice(0), ...spawned.split('\n').filter(Boolean).map((line) => JSON.parse(line) as ObservedViolation)];
}

export const startCheckingResponses = processState;
