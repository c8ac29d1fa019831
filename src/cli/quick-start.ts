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
