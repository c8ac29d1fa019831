import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

interface LockedPackage {
  engines?: { node?: string } | string[];
  optional?: boolean;
}

// semver comes with npm's own dependency tree (fastify uses it); the test needs only these two functions.
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8')) as { packages: Record<string, LockedPackage> };

describe('engines in package.json', () => {
  it('names a Node.js version every locked package supports, so npm ci prints no EBADENGINE warning', () => {
    const lowest = semver.minVersion(manifest.engines.node);
    expect(lowest).not.toBeNull();
    const unsupported = Object.entries(lock.packages).flatMap(([path, locked]) => {
      const wanted = Array.isArray(locked.engines) ? undefined : locked.engines?.node;
      return wanted && !semver.satisfies(lowest!.version, wanted) ? [`${path.replace(/^node_modules\//, '')} needs node ${wanted}`] : [];
    });
    expect(unsupported, `engines says node ${manifest.engines.node}`).toEqual([]);
  });
});
