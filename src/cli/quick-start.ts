import { setFlagsFromString } from 'node:v8';

/**
 * For a command that opens the store for a moment and exits: compile the
 * embedded PostgreSQL's WebAssembly with V8's baseline compiler only. By
 * default V8 also recompiles the hot functions with its optimizing compiler
 * in the background, which pays off in a server but costs a short command
 * more CPU than its whole query work (about 2.9 s → 1.2 s of CPU for
 * `key list` on a 2-core machine). Must run before the store is opened;
 * harmless on PostgreSQL, where no WebAssembly runs.
 */
export function compileForQuickStart(): void {
  setFlagsFromString('--liftoff-only');
}

/**
 * For a command whose work grows with its input (an import): keep V8's
 * optimizing compiler for the embedded PostgreSQL's WebAssembly, but let a
 * function run longer on the baseline code before it is re-optimized. A
 * small import then finishes before most of that work starts (4 lines: about
 * 5.0 s → 3.4 s of CPU), while a big one still gets optimized code (200,000
 * lines: 22.8 s → 21.7 s of CPU, no slower). Must run before the store is opened.
 */
export function compileForBulk(): void {
  setFlagsFromString('--wasm-tiering-budget=180000000');
}
