import { createHash } from 'node:crypto';

// Each connection keeps every statement it has prepared; this bounds how
// many there can be (the list engine's shapes in use are far fewer).
const MAX_PREPARED = 256;

/**
 * Names for prepared statements, derived from their text so every pooled
 * connection prepares a given text under the same name. Past the bound a
 * text runs unprepared rather than growing every connection's cache.
 */
export class StatementNames {
  private readonly names = new Map<string, string>();

  nameOf(text: string): string | undefined {
    const known = this.names.get(text);
    if (known !== undefined || this.names.size >= MAX_PREPARED) return known;
    const name = `s_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    this.names.set(text, name);
    return name;
  }
}
