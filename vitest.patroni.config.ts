import { defineConfig } from 'vitest/config';
import { ownServersTestOptions } from './vitest.topology.config.js';

// Patroni (three members) + etcd + HAProxy under five faults (docs/scaling.md "Automatic failover on Patroni"),
// started by the test on loopback ports: `npm run test:patroni`. Run by hand until its replica-read flake is
// fixed (docs/scaling.md says what it is); CI runs the rest of the topology suite (vitest.topology.config.ts).
export default defineConfig({ test: { ...ownServersTestOptions, include: ['test/topology/patroni-failover.topology.ts'] } });
