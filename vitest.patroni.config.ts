import { defineConfig } from 'vitest/config';
import { ownServersTestOptions } from './vitest.topology.config.js';

// Patroni (three members) + etcd + HAProxy under five faults (docs/scaling.md "Automatic failover on Patroni"),
// started by the test on loopback ports: `npm run test:patroni` runs that file alone, a shortcut while working on
// it; `npm run test:topology` (CI) runs it with the rest of the topology suite.
export default defineConfig({ test: { ...ownServersTestOptions, include: ['test/topology/patroni-failover.topology.ts'] } });
