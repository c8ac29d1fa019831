import type { Command } from 'commander';
import { createOrganization } from '../../auth/organizations.js';
import { print, type OutputOptions } from '../output.js';
import { withStore } from '../with-store.js';

export function registerOrg(program: Command): void {
  const org = program.command('org').description('manage organizations');
  org
    .command('create')
    .description('create an organization')
    .requiredOption('--name <name>', 'display name')
    .option('--uid <uid>', 'organization ID (default: generated org_…)')
    .option('--json', 'machine-readable output')
    .action(async (options: OutputOptions & { name: string; uid?: string }) => {
      const created = await withStore((store) => createOrganization(store, options.name, options.uid));
      print(
        options,
        { uid: created.uid, name: created.name },
        `created organization ${created.uid} (${created.name})\nnext: lending-api key create --org ${created.uid}`,
      );
    });
}
