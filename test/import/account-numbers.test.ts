import { Writable } from 'node:stream';
import { expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { ImportError } from '../../src/import/index.js';
import { dumpAllTables, importLines } from '../helpers/import-lines.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

const ACCOUNTS = Array.from({ length: 15 }, (_, i) => `9${String(i).padStart(2, '0')}4837261${String(50 + i)}`);
const IBAN = 'DE89 3704 0044 0532 0130 00';

/** Everything a leak would show: the full number, and the number without the kept last two digits. */
function secretsIn(text: string): string[] {
  const found: string[] = [];
  for (const account of [...ACCOUNTS, IBAN.replaceAll(' ', '')]) {
    if (text.includes(account)) found.push(account);
    if (text.includes(account.slice(0, -2))) found.push(`${account.slice(0, -2)}…`);
  }
  if (text.includes(IBAN)) found.push(IBAN);
  return found;
}

describeEachStore('account numbers', (store) => {
  it('keeps only the last two digits: not in any table, API response, log line or error message', async () => {
    const tenant = await createTenant(store());
    const lines = [
      ...ACCOUNTS.map((account, i) => ({ object: 'payment_method', uid: `pm_${i}`, entity: 'e', type: 'ACH', currency: 'USD', account_number: account })),
      { object: 'payment_method', uid: 'pm_iban', entity: 'e', type: 'SEPA', currency: 'EUR', account_number: IBAN },
    ];
    await importLines(store(), tenant.org.uid, lines);
    // A refused import of the same numbers must not echo them either.
    const refused = (await importLines(store(), tenant.org.uid, [
      ...lines.map((line) => ({ ...line, currency: 'XXX' })),
      `{"object":"payment_method","account_number":"${ACCOUNTS[0]}",`,
      { ...lines[0], account_number: Number(ACCOUNTS[1]) },
    ]).catch((e: unknown) => e)) as ImportError;
    expect(refused).toBeInstanceOf(ImportError);

    let logs = '';
    const app = await buildApp({
      store: store(),
      logger: { level: 'trace', stream: new Writable({ write: (chunk, _enc, done) => ((logs += String(chunk)), done()) }) },
    });
    const responses: string[] = [];
    for (const url of ['/api/methods/', '/api/methods/?page=2', ...lines.map((line) => `/api/methods/${line.uid}/`)]) {
      const response = await app.inject({ method: 'GET', url, headers: { authorization: tenant.authorization } });
      expect(response.statusCode, url).toBe(200);
      responses.push(response.body);
    }
    await app.close();

    const [pmIban] = await store().query<{ last_2: string }>(`SELECT last_2 FROM payment_methods WHERE org_id = $1 AND uid = 'pm_iban'`, [tenant.org.id]);
    expect(pmIban?.last_2).toBe('00');
    expect(logs.length).toBeGreaterThan(0);
    expect(secretsIn(await dumpAllTables(store()))).toEqual([]);
    expect(secretsIn(responses.join('\n'))).toEqual([]);
    expect(secretsIn(logs)).toEqual([]);
    expect(secretsIn(`${refused.message}\n${JSON.stringify(refused.errors)}`)).toEqual([]);
  });
});
