import { publishAllEvents } from '../events/publish-events.js';
import { findOrganization } from '../organizations/organizations.js';
import type { Store } from '../store/store.js';

/**
 * After a command's write has committed: moves the organization's events
 * into the log at once, so they are listed (and delivered) even when no
 * `serve` node runs. The write stands whatever happens here: a failure is
 * a warning on stderr, and the serve nodes' sweep publishes them later.
 * Resolves to how many events were published, or undefined after a failure.
 */
export async function publishAfterWrite(store: Store, orgUid: string): Promise<number | undefined> {
  try {
    const org = await findOrganization(store, orgUid);
    return org ? await publishAllEvents(store, org.id) : 0;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    process.stderr.write(`lending-api: warning: the change is recorded, but its events could not be published yet (${reason}); serve publishes them (at once if a node runs, else when one starts)\n`);
    return undefined;
  }
}
