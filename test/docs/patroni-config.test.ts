import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentedConfig } from '../helpers/patroni-config.js';

const SCALING = path.resolve(import.meta.dirname, '../../docs/scaling.md');

describe('docs/scaling.md', () => {
  it('shows the Patroni and HAProxy configuration the topology test starts its cluster from, unedited', async () => {
    const text = await readFile(SCALING, 'utf8');
    const block = /<!-- patroni-config:begin -->\n([\s\S]*?)\n<!-- patroni-config:end -->/.exec(text);
    expect(block, 'the patroni-config markers').not.toBeNull();
    // Regenerate with: node --import tsx test/helpers/patroni-config.ts
    expect(block?.[1]).toBe(documentedConfig());
  });
});
