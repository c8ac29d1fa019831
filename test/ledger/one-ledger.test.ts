import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AppOptions } from '../../src/app.js';
import type { Store } from '../../src/store/store.js';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

// STYLE.md: one ledger object, built once by the process, handed to the routes, the CLI and the import.
// app.ts built one when none was handed in, and server.ts and the CLI each built theirs with settings
// of their own: the next concern hooked into the ledger would be hooked into one of them only.
describe("the process's one ledger", () => {
  it('is built in one place only, src/node-ledger.ts: app.ts, server.ts and the CLI build no LedgerWriter', async () => {
    const files = (await readdir(SRC, { recursive: true })).filter((file) => file.endsWith('.ts'));
    const building: string[] = [];
    for (const file of files) {
      if (/\bnew LedgerWriter\b/.test(await readFile(path.join(SRC, file), 'utf8'))) building.push(file);
    }
    expect(building).toEqual(['node-ledger.ts']);
  });

  it('is handed to the app, which cannot be built without one', () => {
    // @ts-expect-error AppOptions requires the process's ledger
    const withoutLedger: AppOptions = { store: {} as Store };
    expect(withoutLedger).not.toHaveProperty('ledger');
  });
});
