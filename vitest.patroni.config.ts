import { defineConfig } from 'vitest/config';
import { ownServersTestOptions } from './vitest.topology.config.js';

// Patroni (three members) + etcd + HAProxy under five faults, and an open event stream across a failover
// (docs/scaling.md "Automatic failover on Patroni"), started by the tests on loopback ports: `npm run test:patroni`
// runs those files alone, a shortcut while working on them; `npm run test:topology` (CI) runs them with the rest.
export default defineConfig({ test: { ...ownServersTestOptions, include: ['test/topology/patroni-failover.topology.ts', 'test/topology/patroni-stream.topology.ts'] } });
