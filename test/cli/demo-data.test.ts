import { describe, expect, it } from 'vitest';
import { demoLines } from '../../src/cli/demo-data.js';
import { RESOURCES } from '../../src/resources/index.js';

describe('the demo data', () => {
  it("holds the record of every collection's example uid, which /docs pre-fills in Try it out (a new collection's demo lines go in its definition)", () => {
    const uids = new Set(demoLines().map((line) => line.uid));
    const missing = RESOURCES.filter((resource) => !resource.parent && resource.fields.uid)
      .map((resource) => `${resource.path}: ${String(resource.fields.uid?.example)}`)
      .filter((entry) => !uids.has(entry.split(': ')[1]));
    expect(missing, 'add the record to the definition: importLine.demo').toEqual([]);
  });

});
