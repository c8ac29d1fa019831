/**
 * How many event streams each API key has open on this node, at most
 * `perKey` (SPEC §3c: 4): `take` answers a release to call when the stream
 * ends, or undefined when the key already has `perKey` open.
 */
export class StreamSlots {
  private readonly open = new Map<string, number>();

  constructor(readonly perKey: number) {}

  take(keyId: string): (() => void) | undefined {
    const count = this.open.get(keyId) ?? 0;
    if (count >= this.perKey) return undefined;
    this.open.set(keyId, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(keyId) ?? 1) - 1;
      if (left === 0) this.open.delete(keyId);
      else this.open.set(keyId, left);
    };
  }

  /** Streams open on this node, all keys together. */
  get total(): number {
    let total = 0;
    for (const count of this.open.values()) total += count;
    return total;
  }
}
