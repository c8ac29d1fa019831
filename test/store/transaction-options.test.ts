import { expect, it } from 'vitest';
import { describeEachStore } from '../helpers/stores.js';

const SETTING = "SELECT current_setting('synchronous_commit') AS value";

describeEachStore('store.transaction options and queryAtCommit', (store) => {
  it('runs a transaction with synchronousCommit remote_apply under it, and the next one under the default again', async () => {
    const inside = await store().transaction(async (tx) => (await tx.query<{ value: string }>(SETTING))[0]?.value, { synchronousCommit: 'remote_apply' });
    expect(inside).toBe('remote_apply');
    const [outside] = await store().query<{ value: string }>(SETTING);
    const plain = await store().transaction(async (tx) => (await tx.query<{ value: string }>(SETTING))[0]?.value);
    expect(plain).toBe(outside?.value);
    expect(plain).not.toBe('remote_apply');
  });

  it('commits the statement given to queryAtCommit with the transaction, its text values intact', async () => {
    const text = String.raw`O'Brien \' \\ "x" E'\n' $1 — ✓`;
    await store().exec('CREATE TABLE IF NOT EXISTS at_commit (n int, t text)');
    await store().exec('TRUNCATE at_commit');
    await store().transaction(async (tx) => {
      await tx.query('INSERT INTO at_commit VALUES (1, NULL)');
      tx.queryAtCommit('UPDATE at_commit SET t = $2 WHERE n = $1', [1, text]);
    });
    expect(await store().query('SELECT n, t FROM at_commit')).toEqual([{ n: 1, t: text }]);
  });

  it('rolls the whole transaction back when the statement given to queryAtCommit fails', async () => {
    await store().exec('CREATE TABLE IF NOT EXISTS at_commit (n int, t text)');
    await store().exec('TRUNCATE at_commit');
    await expect(
      store().transaction(async (tx) => {
        await tx.query('INSERT INTO at_commit VALUES (2, NULL)');
        tx.queryAtCommit('UPDATE at_commit SET n = $1 WHERE n = 2', ['not a number']);
      }),
    ).rejects.toThrow();
    expect(await store().query('SELECT n FROM at_commit')).toEqual([]);
  });
});
