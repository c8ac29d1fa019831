import { readFile } from 'node:fs/promises';

/** CPU time counters of the whole machine (Linux /proc/stat), in clock ticks. */
export interface CpuTimes {
  readonly steal: number;
  readonly total: number;
}

export async function readCpuTimes(): Promise<CpuTimes | undefined> {
  const stat = await readFile('/proc/stat', 'utf8').catch(() => '');
  const fields = /^cpu\s+(.*)$/m.exec(stat)?.[1]?.trim().split(/\s+/).map(Number);
  if (!fields || fields.length < 8) return undefined;
  // user nice system idle iowait irq softirq steal [guest guest_nice: already counted in user/nice]
  return { steal: fields[7] ?? 0, total: fields.slice(0, 8).reduce((sum, value) => sum + value, 0) };
}

/**
 * The share of CPU time the hypervisor gave to other guests between two
 * readings: on a shared VM, the figures of a run move with it.
 */
export function stolenShare(before: CpuTimes | undefined, after: CpuTimes | undefined): number | undefined {
  if (!before || !after || after.total === before.total) return undefined;
  return (after.steal - before.steal) / (after.total - before.total);
}
