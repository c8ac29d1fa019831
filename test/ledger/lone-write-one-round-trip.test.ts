import pg from 'pg';
import { expect, it } from 'vitest';
import { entryOperation, LedgerWriter, limitViewOf, newLedgerId, type LedgerKind, type LedgerResult, type LedgerWriteRequest, type WriteAnswer } from '../../src/ledger/index.js';
import { creditLimits } from '../../src/resources/credit-limits.js';
import { TransactionInterruptedError } from '../../src/store/transaction-interrupted.js';
import { recordPgMessages } from '../helpers/pg-messages.js';
import { describeEachStore } from '../helpers/stores.js';
import { ledgerState, useWriter } from '../helpers/writes.js';

// A write that runs alone goes to PostgreSQL whole: BEGIN, the statement that claims its key and writes,
// the statement that stores its answer's values under the key, and COMMIT, in one message. Its answer is
// rendered from the values stored, so a replay renders the same bytes.
describeEachStore('a lone write in one round trip', (store, kind) => {
  const { writer, newLimit } = useWriter(store);
  const folds = kind === 'postgres' && process.env.DATABASE_PREPARED_STATEMENTS !== 'false';

  const messages = recordPgMessages();

  const writerOn = () => new LedgerWriter(store(), { idempotencyTtlHours: 24 });
  const request = (limit: string, entryKind: LedgerKind, amount: string, key: string, at?: string): LedgerWriteRequest<LedgerResult> => ({
    operation: entryOperation(limitViewOf(creditLimits), { orgId: writer().org.id, kind: entryKind, id: newLedgerId(entryKind), limit, amount, at, keyId: writer().keyId }),
    idempotency: { key, keyId: writer().keyId },
    requestId: `req-${key}`,
  });
  const storedAnswer = async (key: string) => {
    const [row] = await store().query<{ status: number; body: string | null; row: Record<string, unknown> | null }>(
      'SELECT response_status AS status, response_body AS body, response_row AS row FROM idempotency_keys WHERE org_id = $1 AND idempotency_key = $2',
      [writer().org.id, key],
    );
    return row;
  };
  /**
   * The messages sent to PostgreSQL (none on PGlite). On Citus a write's cause goes in a message of its own
   * between the others (src/store/commit-messages.ts): joined with them again here, they are the one message
   * plain PostgreSQL gets.
   */
  const sent = () => (process.env.TEST_DISTRIBUTE_ON_CITUS === '1' ? joinedAroundCauses(messages.sent()) : [...messages.sent()]);
  const messagesOf = async (write: () => Promise<WriteAnswer>) => {
    messages.reset();
    const answer = await write();
    return { answer, messages: sent() };
  };
  // The claim; the write's cause (for its events), the write and its answer; COMMIT.
  const ONE_MESSAGE = /^BEGIN; SET LOCAL synchronous_commit = remote_apply; EXECUTE s_[0-9a-f]+\(.*\); SET LOCAL lending\.event_context = '.*'; EXECUTE s_[0-9a-f]+\(.*\); EXECUTE s_[0-9a-f]+\(.*\); COMMIT$/s;

  it('stores a 201 as the values it was rendered from; a replay renders them byte for byte, the limit as the write left it', async () => {
    const uid = await newLimit('1000.00');
    const writes = writerOn();
    const first = await writes.write(request(uid, 'drawdown', '12.34', 'values-1'));
    expect(first.status).toBe(201);
    const stored = await storedAnswer('values-1');
    expect(stored?.body).toBeNull();
    expect(stored?.row).toMatchObject({ entry_amount: '12.34', entry_kind: 'drawdown', outstanding: '12.34', uid });
    expect(Number(stored?.status)).toBe(201);
    // The limit moves on; the replay still shows it as the first write left it.
    await writes.write(request(uid, 'drawdown', '50.00', 'values-2'));
    const replay = await writes.write(request(uid, 'drawdown', '12.34', 'values-1'));
    expect(replay).toMatchObject({ status: 201, replayed: true });
    expect(replay.body).toBe(first.body);
    expect(JSON.parse(first.body ?? '')).toMatchObject({ entry: { amount: 12.34, kind: 'drawdown' }, limit: { uid, outstanding: 12.34, balance: 987.66 } });
    expect(first.value).toMatchObject({ amount: '12.34', outstanding: '12.34', applied: true });
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '62.34', entries: 2 });
  });

  it('leaves no claim behind when it wrote nothing: a refusal is stored as its code and values, a bad time or an unknown limit not at all', async () => {
    const uid = await newLimit('100.00', '95.00');
    const writes = writerOn();
    const refused = await writes.write(request(uid, 'drawdown', '10.00', 'nothing-1'));
    expect(refused.status).toBe(409);
    const refusal = { code: 'insufficient_balance', detail: expect.stringMatching(/^drawdown of 10\.00 refused: it exceeds the balance of /), request_id: 'req-nothing-1' };
    expect(refused).toMatchObject({ refusal });
    expect(refused.body).toBeUndefined();
    expect(await storedAnswer('nothing-1')).toMatchObject({ body: null, row: { ...refusal, detail: refused.refusal?.detail } });
    const replay = await writes.write(request(uid, 'drawdown', '10.00', 'nothing-1'));
    expect(replay).toEqual({ status: 409, replayed: true, refusal: refused.refusal });

    await expect(writes.write(request(uid, 'repayment', '1.00', 'nothing-2', '2999-01-01T00:00:00.000000Z'))).rejects.toMatchObject({ code: 'invalid_entry' });
    await expect(writes.write(request('cl_no_such_limit', 'drawdown', '1.00', 'nothing-3'))).rejects.toMatchObject({ code: 'limit_not_found' });
    expect(await storedAnswer('nothing-2')).toBeUndefined();
    expect(await storedAnswer('nothing-3')).toBeUndefined();
    // Nothing ran: the same keys are free for the corrected requests.
    expect((await writes.write(request(uid, 'repayment', '1.00', 'nothing-2'))).status).toBe(201);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '94.00', entries: 1 });
  });

  it('takes over an expired key whose answer was stored as values, and answers another request on a live one 422', async () => {
    const uid = await newLimit('1000.00');
    const writes = writerOn();
    await writes.write(request(uid, 'drawdown', '1.00', 'expiring'));
    await expect(writes.write(request(uid, 'drawdown', '2.00', 'expiring'))).rejects.toMatchObject({ code: 'idempotency_key_reused', status: 422 });
    await store().query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE org_id = $1 AND idempotency_key = 'expiring'`, [writer().org.id]);
    const again = await writes.write(request(uid, 'drawdown', '2.00', 'expiring'));
    expect(again).toMatchObject({ status: 201, replayed: false });
    expect((await storedAnswer('expiring'))?.row).toMatchObject({ entry_amount: '2.00', outstanding: '3.00' });
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '3.00', entries: 2 });
  });

  it.runIf(kind === 'postgres')('sends a lone write as one message once its connection has prepared its statements; a replay too; a refusal then goes the long way', async () => {
    const uid = await newLimit('10.00');
    const writes = writerOn();
    // Sequential writes reuse the pool's most recently released connection: the first prepares the statements.
    await writes.write(request(uid, 'drawdown', '1.00', 'message-0'));
    const written = await messagesOf(() => writes.write(request(uid, 'drawdown', '2.00', 'message-1')));
    const replayed = await messagesOf(() => writes.write(request(uid, 'drawdown', '2.00', 'message-1')));
    const refused = await messagesOf(() => writes.write(request(uid, 'drawdown', '9.00', 'message-2')));
    expect(written.answer).toMatchObject({ status: 201, replayed: false });
    expect(replayed.answer).toMatchObject({ status: 201, replayed: true, body: written.answer.body });
    expect(refused.answer.status).toBe(409);
    if (folds) {
      expect(written.messages).toHaveLength(1);
      expect(written.messages[0]).toMatch(ONE_MESSAGE);
      expect(replayed.messages).toHaveLength(1);
      expect(replayed.messages[0]).toMatch(ONE_MESSAGE);
      // The one message wrote nothing (its claim deleted in it); the long way claims again and stores the refusal.
      expect(refused.messages[0]).toMatch(ONE_MESSAGE);
      expect(refused.messages.length).toBeGreaterThan(1);
    } else {
      // Where connections keep no prepared statements (PgBouncer in transaction mode), one statement a message.
      for (const message of [...written.messages, ...replayed.messages]) expect(message).not.toMatch(/EXECUTE|; COMMIT/);
    }
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '3.00', entries: 2 });
  });

  /** A writer with one transaction slot on a store that counts its transactions. */
  const oneSlotWriter = () => {
    const counter = { transactions: 0 };
    const inner = store();
    const counted = { ...inner, transaction: ((fn, options) => ((counter.transactions += 1), inner.transaction(fn, options))) as typeof inner.transaction };
    const writes = new LedgerWriter(counted, {
      idempotencyTtlHours: 24,
      queue: { concurrency: 1 },
    });
    return { writes, counter };
  };
  const outcomeOf = (answer: PromiseSettledResult<WriteAnswer>) =>
    answer.status === 'fulfilled' ? { status: answer.value.status, replayed: answer.value.replayed } : { error: (answer.reason as { code?: string }).code };

  it('runs lone writes to other limits that arrive together in one transaction, each answered as if alone', async () => {
    const [a, b, c, full, other] = [await newLimit('100.00'), await newLimit('100.00'), await newLimit('100.00'), await newLimit('10.00', '10.00'), await newLimit('100.00')];
    const { writes, counter } = oneSlotWriter();
    // A joined batch first: its connection prepares the joined statements (before that, they go one by one).
    const warm = await newLimit('100.00');
    await Promise.all([writes.write(request(a, 'drawdown', '1.00', 'join-warm')), writes.write(request(warm, 'drawdown', '1.00', 'join-warm-2'))]);
    messages.reset();
    counter.transactions = 0;
    // They arrive in one turn of the event loop, which ends before any starts: the lone writes to a, c, b and
    // `full` go together (the write that reuses b's key does not join them: it would claim one key twice).
    const answers = await Promise.allSettled([
      writes.write(request(a, 'drawdown', '2.00', 'join-a')),
      writes.write(request(c, 'drawdown', '3.00', 'join-c')),
      writes.write(request(b, 'drawdown', '5.00', 'join-b')),
      writes.write(request(full, 'drawdown', '1.00', 'join-full')),
      writes.write(request(other, 'drawdown', '4.00', 'join-b')),
    ]);
    expect(answers.map(outcomeOf)).toEqual([
      { status: 201, replayed: false },
      { status: 201, replayed: false },
      { status: 201, replayed: false },
      { status: 409, replayed: false },
      { error: 'idempotency_key_reused' },
    ]);
    // a, c, b and `full` together; `full` again the long way (refused: it tells why, and stores it); the reused key.
    expect(counter.transactions).toBe(3);
    if (folds) {
      const joined = sent().find((message) => message.includes('"objects"'));
      // The claim of the four keys, the lock of their limits (in uid order), every write's cause, then ONE
      // statement that writes all four and stores their answers (src/ledger/joined-entries.ts).
      expect(joined, 'the four lone writes went as one message').toMatch(
        /^BEGIN; SET LOCAL synchronous_commit = remote_apply; EXECUTE s_[0-9a-f]+\(.*\); EXECUTE s_[0-9a-f]+\(.*\); SET LOCAL lending\.event_context = '[^']*'; EXECUTE s_[0-9a-f]+\(.*\); COMMIT$/s,
      );
      // Every write's cause, named by the records it changes: their events name their own request.
      for (const [uid, key] of [[a, 'join-a'], [b, 'join-b'], [c, 'join-c'], [full, 'join-full']] as const) {
        expect(joined).toContain(`"${uid}":{"request_id":"req-${key}","idempotency_key":"${key}"}`);
      }
    }
    for (const [uid, outstanding, entries] of [[a, '3.00', 2], [b, '5.00', 1], [c, '3.00', 1], [full, '10.00', 0], [other, '0.00', 0]] as const) {
      expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding, entries });
    }
    expect((await storedAnswer('join-full'))?.row).toMatchObject({ code: 'insufficient_balance' });
  });

  it('runs every write of a joined transaction again alone when one of its statements fails: the others succeed once', async () => {
    const [a, good, bad] = [await newLimit('100.00'), await newLimit('100.00'), await newLimit('100.00', '50.00')];
    const { writes, counter } = oneSlotWriter();
    counter.transactions = 0;
    const answers = await Promise.allSettled([
      writes.write(request(a, 'drawdown', '1.00', 'fail-join-a')),
      writes.write(request(good, 'drawdown', '2.00', 'fail-join-good')),
      // No route sends this (the body check refuses it); the ledger's CHECK does too, and fails the statement.
      writes.write(request(bad, 'repayment', '0.00', 'fail-join-bad')),
    ]);
    expect(answers.map(outcomeOf)).toEqual([{ status: 201, replayed: false }, { status: 201, replayed: false }, { error: '23514' }]);
    // a, good and bad together, which failed; then each alone.
    expect(counter.transactions).toBe(4);
    expect(await ledgerState(store(), writer().org.id, good)).toEqual({ outstanding: '2.00', entries: 1 });
    expect(await ledgerState(store(), writer().org.id, bad)).toEqual({ outstanding: '50.00', entries: 0 });
    expect(await storedAnswer('fail-join-bad')).toBeUndefined();
  });

  it.runIf(folds)('answers 503 (nothing ran), not 504, when a statement of the one message fails: the server skipped its COMMIT', async () => {
    const uid = await newLimit('10.00');
    const writes = writerOn();
    await writes.write(request(uid, 'drawdown', '1.00', 'timeout-0'));
    // The connection the next write takes (the pool's most recently released) gets a short statement_timeout,
    // and the limit's row is locked elsewhere: its one message waits, then the timeout cancels it.
    await store().query('SET statement_timeout = 300');
    const [{ schema } = { schema: '' }] = await store().query<{ schema: string }>('SELECT current_schema() AS schema');
    const holder = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${pg.escapeIdentifier(schema)}.credit_limits WHERE org_id = $1 AND uid = $2 FOR UPDATE`, [writer().org.id, uid]);
      const timedOut = await messagesOf(() => writes.write(request(uid, 'drawdown', '2.00', 'timeout-1')).catch((error: unknown) => error as WriteAnswer));
      expect(timedOut.messages[0]).toMatch(ONE_MESSAGE);
      // The HTTP layer answers a TransactionInterruptedError 503 service_unavailable, or 504 when its outcome is unknown.
      expect(timedOut.answer).toBeInstanceOf(TransactionInterruptedError);
      expect(timedOut.answer).toMatchObject({ stage: 'in-transaction', outcomeUnknown: false });
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    expect(await storedAnswer('timeout-1')).toBeUndefined();
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '1.00', entries: 1 });
    // The connection that failed was dropped (with its statement_timeout): the retry runs.
    expect((await writes.write(request(uid, 'drawdown', '2.00', 'timeout-1'))).status).toBe(201);
  });
});

const CAUSE_ALONE = /^SET LOCAL citus\.propagate_set_commands = 'local'; (SET LOCAL lending\.event_context = '[^']*'); SET LOCAL citus\.propagate_set_commands = 'none'$/s;

/** The messages as one: each cause sent alone is put back between the message before it and the one after. */
function joinedAroundCauses(sent: readonly string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < sent.length; i += 1) {
    const cause = CAUSE_ALONE.exec(sent[i]!)?.[1];
    if (cause === undefined || joined.length === 0) joined.push(sent[i]!);
    else joined.push(`${joined.pop()}; ${cause}${i + 1 < sent.length ? `; ${sent[(i += 1)]}` : ''}`);
  }
  return joined;
}
