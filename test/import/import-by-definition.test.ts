import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { ImportError } from '../../src/import/index.js';
import { recordKindsOf } from '../../src/import/record-kinds.js';
import type { ResourceDefinition } from '../../src/listing/resource-definition.js';
import { RESOURCES } from '../../src/resources/index.js';
import type { Store } from '../../src/store/store.js';
import { dumpAllTables, importLines } from '../helpers/import-lines.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

async function getJson(store: Store, tenant: Tenant, url: string) {
  const app = await buildApp({ store });
  const response = await app.inject({ method: 'GET', url, headers: { authorization: tenant.authorization } });
  await app.close();
  return { status: response.statusCode, body: response.json() };
}

describe('import by definition', () => {
  it('makes every collection whose definition has an importLine importable, by its object', () => {
    const kinds = recordKindsOf(RESOURCES);
    expect(kinds.kinds.map((kind) => [kind.object, kind.table])).toEqual(
      RESOURCES.filter((resource) => resource.importLine).map((resource) => [resource.importLine?.object, resource.table]),
    );
    expect(kinds.byObject('entity')?.columns).toEqual(['name', 'country']);
    // The write-only account number is a field a line may give; last_2 is the column it becomes.
    expect(kinds.byObject('payment_method')?.known.has('account_number')).toBe(true);
    expect(kinds.byObject('payment_method')?.columns).not.toContain('account_number');
  });

  it('refuses two collections that stage one column with different types', () => {
    const [first] = RESOURCES;
    if (!first?.importLine) throw new Error('the first collection is importable');
    const clash: ResourceDefinition = {
      ...first,
      table: 'clashes',
      importLine: { object: 'clash', uidPrefix: 'x', fields: { entity: { kind: 'decimal', precision: 5, scale: 0, allowZero: true } } },
    };
    expect(() => recordKindsOf([first, clash])).toThrow(/import field clashes.entity is numeric\(5, 0\), but another collection stages entity as text/);
  });
});

describeEachStore('importJsonl: entities', (store) => {
  it('imports {"object":"entity",…} lines, served at /api/entities/', async () => {
    const tenant = await createTenant(store());
    const summary = await importLines(store(), tenant.org.uid, [
      { object: 'entity', uid: 'ent_1', name: 'Acme Ltd', country: 'GB' },
      { object: 'entity', uid: 'ent_2', name: 'Zeta GmbH', country: 'de', created_at: '2024-05-01T10:00:00Z' },
      { object: 'payment_method', uid: 'pm_1', entity: 'ent_1', type: 'BACS', currency: 'GBP', last_2: '42' },
    ]);
    expect(summary.collections.entities).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
    expect(summary.inserted).toBe(3);
    const entity = await getJson(store(), tenant, '/api/entities/ent_2/');
    expect(entity.body).toMatchObject({ uid: 'ent_2', name: 'Zeta GmbH', country: 'DE', created_at: '2024-05-01T10:00:00.000000Z' });
    const byCountry = await getJson(store(), tenant, '/api/entities/?country=gb');
    expect(byCountry.body.items.map((item: { uid: string }) => item.uid)).toEqual(['ent_1']);
    // ı upper-cases to I in JavaScript: 'ıe' must not be read as IE.
    const dotless = await getJson(store(), tenant, '/api/entities/?country=%C4%B1e');
    expect(dotless.status).toBe(422);
    expect(dotless.body).toMatchObject({ errors: [{ param: 'country', detail: expect.stringMatching(/two-letter ISO 3166-1/) }] });
  });

  it('upserts entities by uid: the same file twice changes nothing, a changed name updates', async () => {
    const tenant = await createTenant(store());
    const line = { object: 'entity', uid: 'ent_1', name: 'Acme Ltd', country: 'GB' };
    await importLines(store(), tenant.org.uid, [line]);
    const before = await dumpAllTables(store());
    expect((await importLines(store(), tenant.org.uid, [line])).collections.entities).toEqual({ inserted: 0, updated: 0, unchanged: 1 });
    expect(await dumpAllTables(store())).toBe(before);
    expect((await importLines(store(), tenant.org.uid, [{ ...line, name: 'Acme Holdings' }])).collections.entities).toEqual({ inserted: 0, updated: 1, unchanged: 0 });
    expect((await getJson(store(), tenant, '/api/entities/ent_1/')).body.name).toBe('Acme Holdings');
  });

  it('validates entity lines from the definition, every reason at once', async () => {
    const tenant = await createTenant(store());
    const error = (await importLines(store(), tenant.org.uid, [
      { object: 'entity', uid: 'ent_1', name: 'Acme Ltd', country: 'UK' },
      { object: 'entity', uid: 'ent_2', country: 'Britain', colour: 'red' },
      { object: 'entity', name: 'n'.repeat(201), country: 'GB' },
      { object: 'entity', name: 'Tab\there', country: 'GB' },
    ]).catch((e: unknown) => e)) as ImportError;
    expect(error).toBeInstanceOf(ImportError);
    expect(error.errors).toEqual([
      { line: 1, reason: "country must be an assigned ISO 3166-1 alpha-2 country code, got 'UK'" },
      { line: 2, reason: "unknown field 'colour'; name is required; country must be a two-letter ISO 3166-1 country code, got 'Britain'" },
      { line: 3, reason: 'name must be at most 200 characters' },
      { line: 4, reason: 'name must not contain control characters' },
    ]);
  });
});
