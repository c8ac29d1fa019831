import { DomainError } from '../domain/domain-error.js';

/** Why one line of an import was rejected. */
export interface LineError {
  readonly line: number;
  readonly reason: string;
}

/**
 * The import was refused and nothing was written. `errors` lists the first
 * invalid lines (capped); `total` counts them all.
 */
export class ImportError extends DomainError {
  readonly errors: readonly LineError[];
  readonly total: number;

  constructor(errors: readonly LineError[], total: number) {
    const listing = errors.map((error) => `\n  line ${error.line}: ${error.reason}`).join('');
    const rest = total - errors.length;
    super(`${total} invalid ${total === 1 ? 'line' : 'lines'}; nothing was imported${listing}${rest > 0 ? `\n  … and ${rest} more` : ''}`);
    this.name = 'ImportError';
    this.errors = errors;
    this.total = total;
  }
}

/** Keeps the `max` first line errors in line order, whatever order they come in, and counts the rest. */
export class LineErrorList {
  private readonly kept: LineError[] = [];
  private count = 0;

  constructor(private readonly max: number) {}

  /** Adds one error; errors may come in any line order (the checks run in phases). */
  add(error: LineError): void {
    this.count += 1;
    const last = this.kept[this.kept.length - 1];
    if (this.kept.length < this.max && (!last || last.line <= error.line)) {
      this.kept.push(error); // the common case: streaming, in line order
      return;
    }
    if (last && last.line <= error.line) return;
    const at = this.kept.findIndex((kept) => kept.line > error.line);
    this.kept.splice(at, 0, error);
    if (this.kept.length > this.max) this.kept.pop();
  }

  /** Adds the first errors of a query (in line order) and how many it found in all. */
  addCounted(errors: readonly LineError[], total: number): void {
    const merged = [...this.kept, ...errors].sort((a, b) => a.line - b.line).slice(0, this.max);
    this.kept.splice(0, this.kept.length, ...merged);
    this.count += total;
  }

  get total(): number {
    return this.count;
  }

  toError(): ImportError {
    return new ImportError([...this.kept], this.count);
  }
}
