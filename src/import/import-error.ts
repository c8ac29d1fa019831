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

/** Keeps the first `max` line errors in line order and counts the rest. */
export class LineErrorList {
  private readonly kept: LineError[] = [];
  private count = 0;

  constructor(private readonly max: number) {}

  add(error: LineError): void {
    this.count += 1;
    if (this.kept.length < this.max) this.kept.push(error);
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
