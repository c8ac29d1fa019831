import { distribute } from '../../store/citus-distribution.js';
import { print, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

/** `distribute`: applies the sharding plan on a Citus coordinator. */
export async function runDistribute(options: OutputOptions): Promise<void> {
  const report = await withStore((store) => distribute(store));
  const width = Math.max(...report.steps.map((step) => step.table.length));
  const lines = report.steps.map(
    (step) =>
      `${step.table.padEnd(width)}  ${step.placement === 'reference' ? 'reference table' : 'distributed by org_id'}` +
      `${step.done === 'already' ? ' (already)' : ''}`,
  );
  const readded = report.foreignKeysReadded.length > 0 ? `\nforeign keys added back: ${report.foreignKeysReadded.join(', ')}` : '';
  print(
    options,
    report,
    `Citus ${report.citusVersion}, ${report.workers} workers, ${report.shardCount} shards per distributed table (co-located)\n${lines.join('\n')}${readded}`,
  );
}
