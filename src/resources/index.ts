import type { ResourceDefinition } from '../listing/resource-definition.js';
import { creditLimits } from './credit-limits.js';
import { entities } from './entities.js';
import { ledgerEntries } from './ledger-entries.js';
import { loans } from './loans.js';
import { paymentMethods } from './payment-methods.js';

/** Every collection the API serves. A new collection is one more entry here. */
export const RESOURCES: readonly ResourceDefinition[] = [paymentMethods, creditLimits, entities, ledgerEntries, loans];

/**
 * The collections the ledger writes, when `resources` serves them: drawdowns and repayments are posted to
 * a credit limit, loans are created and repaid. The ledger's statements name their tables, so these are
 * the definitions themselves, not look-alikes.
 */
export function ledgerCollectionsOf(resources: readonly ResourceDefinition[]): { limits: ResourceDefinition; loans: ResourceDefinition | undefined } | undefined {
  if (!resources.includes(creditLimits)) return undefined;
  return { limits: creditLimits, loans: resources.includes(loans) ? loans : undefined };
}
