import type { Command } from 'commander';
import { distribute } from '../../store/citus-distribution.js';
import { print, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

export function registerDistribute(program: Command): void {
  program
    .command('distribute')
    .description('apply the sharding plan on a Citus coordinator: reference tables, then every other table distributed by org_id (idempotent)')
    .option('--json', 'machine-readable output')
    .action(async (options: OutputOptions) => {
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
    });
}
