import type { ResourceDefinition } from '../listing/resource-definition.js';
import { creditLimits } from './credit-limits.js';
import { entities } from './entities.js';
import { ledgerEntries } from './ledger-entries.js';
import { loans } from './loans.js';
import { paymentMethods } from './payment-methods.js';

/** Every collection the API serves. A new collection is one more entry here. */
export const RESOURCES: readonly ResourceDefinition[] = [paymentMethods, creditLimits, entities, ledgerEntries, loans];
