import fc from 'fast-check';
import { expect, it } from 'vitest';
import { entryOperation, LedgerWriter, limitViewOf, newLedgerId, type LedgerKind, type LedgerResult, type LedgerWriteRequest, type WriteAnswer } from '../../src/ledger/index.js';
import { creditLimits } from '../../src/resources/credit-limits.js';
import { describeEachStore } from '../helpers/stores.js';
import { useWriter } from '../helpers/writes.js';

// Lone writes to distinct limits that wait together are written by ONE set-based statement
// (src/ledger/joined-entries.ts). Whatever a batch holds — accepted and refused drawdowns and repayments,
// several writes to one limit (which go the long way), replays of keys answered before, a key reused for
// another request — each write is answered as if alone, the money adds up, each recorded write has exactly
// its two events naming its own request, and a limit's updated_at only moves forward.
describeEachStore('joined writes (set-based statements)', (store) => {
  const { writer, newLimit } = useWriter(store);

  interface Step {
    readonly limit: number;
    readonly kind: LedgerKind;
    readonly cents: number;
    /** Send again the key (and body) of an earlier step of the run: a replay. */
    readonly replayOf?: number;
  }
  const step = fc.record({
    limit: fc.integer({ min: 0, max: 4 }),
    kind: fc.constantFrom<LedgerKind>('drawdown', 'drawdown', 'repayment'),
    cents: fc.integer({ min: 1, max: 6000 }),
    replayOf: fc.option(fc.nat({ max: 20 }), { nil: undefined }),
  });

  it('answers each write of a joined batch as if alone; money, events and updated_at hold', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(step, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (batches) => {
        run += 1;
        const limits = [await newLimit('100.00'), await newLimit('100.00'), await newLimit('50.00', '20.00'), await newLimit('100.00'), await newLimit('30.00')];
        const leadLimit = await newLimit('1000.00');
        // One transaction at a time: the writes of a turn wait together behind the one running, and join.
        const writes = new LedgerWriter(store(), { idempotencyTtlHours: 24, queue: { concurrency: 1 } });
        const sent: { key: string; request: LedgerWriteRequest<LedgerResult>; answer?: WriteAnswer<LedgerResult>; limit: string }[] = [];
        const requestOf = (s: Step, key: string): LedgerWriteRequest<LedgerResult> => ({
          operation: entryOperation(limitViewOf(creditLimits), {
            orgId: writer().org.id,
            kind: s.kind,
            id: newLedgerId(s.kind),
            limit: limits[s.limit] as string,
            amount: (s.cents / 100).toFixed(2),
            keyId: writer().keyId,
          }),
          idempotency: { key, keyId: writer().keyId },
          requestId: `req-${key}`,
        });
        const replays: { key: string; first: number; answer?: WriteAnswer }[] = [];
        const before = await limitRows(limits);
        for (const batch of batches) {
          const pending = batch.map((s) => {
            const earlier = s.replayOf === undefined ? undefined : sent[s.replayOf];
            if (earlier) {
              // The same key and the same request (fingerprint): the first answer again, nothing written.
              const again = { ...earlier.request, operation: { ...earlier.request.operation } };
              const replay: (typeof replays)[number] = { key: earlier.key, first: sent.indexOf(earlier) };
              replays.push(replay);
              return writes.write(again).then((answer) => void (replay.answer = answer), () => undefined);
            }
            const key = `jw-${run}-${sent.length}`;
            const entry = { key, request: requestOf(s, key), limit: limits[s.limit] as string } as (typeof sent)[number];
            sent.push(entry);
            return writes.write(entry.request).then((answer) => void (entry.answer = answer));
          });
          // A writer that is busy makes the whole batch wait together.
          const lead = requestOf({ limit: 0, kind: 'drawdown', cents: 1 }, `jw-${run}-lead-${sent.length}`);
          await Promise.all([writes.write({ ...lead, operation: entryOperation(limitViewOf(creditLimits), { orgId: writer().org.id, kind: 'drawdown', id: newLedgerId('drawdown'), limit: leadLimit, amount: '0.01', keyId: writer().keyId }) }), ...pending]);
        }
        const after = await limitRows(limits);
        for (const [i, uid] of limits.entries()) {
          const accepted = sent.filter((s) => s.limit === uid && s.answer?.status === 201);
          const moved = accepted.reduce((sum, s) => sum + (s.answer?.value?.kind === 'drawdown' ? 1 : -1) * Math.round(Number(s.answer?.value?.amount) * 100), 0);
          expect(cents(after[i]?.outstanding), `outstanding of ${uid}`).toBe(cents(before[i]?.outstanding) + moved);
          expect(after[i]?.entries).toBe((before[i]?.entries ?? 0) + accepted.length);
          expect(cents(after[i]?.outstanding)).toBeLessThanOrEqual(cents(after[i]?.capacity));
          // Each 201 shows the limit as its write left it; in the order they were recorded, updated_at only moves forward.
          const stamps = accepted.map((s) => s.answer?.value?.updated_at ?? '').sort();
          expect(new Set(stamps).size).toBe(stamps.length);
          if (accepted.length > 0) expect((after[i]?.updated_at ?? '') > (before[i]?.updated_at ?? '')).toBe(true);
        }
        for (const s of sent) {
          expect([201, 409]).toContain(s.answer?.status);
          const events = await eventsOf(s.key);
          // Recorded: its entry's and its limit's events, naming its request; refused: none.
          expect(events, `events of ${s.key}`).toEqual(
            s.answer?.status === 201 ? [{ type: 'credit_limit.updated', object_uid: s.limit, request_id: `req-${s.key}` }, { type: 'ledger_entry.created', object_uid: s.answer.value?.id, request_id: `req-${s.key}` }] : [],
          );
        }
        for (const replay of replays) {
          const first = sent[replay.first]?.answer;
          // A replay of a write answered before it: the same status and bytes; of one in its own batch: that write's answer.
          expect(replay.answer?.status).toBe(first?.status);
          expect(replay.answer?.body ?? replay.answer?.refusal).toEqual(first?.body ?? first?.refusal);
        }
      }),
      { numRuns: 8 },
    );
  });

  const limitRows = async (uids: readonly string[]) => {
    const rows = await store().query<{ uid: string; outstanding: string; capacity: string; updated_at: string; entries: string }>(
      `SELECT l.uid, l.outstanding::text, l.capacity::text, to_char(l.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS updated_at,
              (SELECT count(*) FROM ledger_entries e WHERE e.org_id = l.org_id AND e.limit_id = l.id)::text AS entries
         FROM credit_limits l WHERE l.org_id = $1 AND l.uid = ANY ($2::text[])`,
      [writer().org.id, uids],
    );
    return uids.map((uid) => {
      const row = rows.find((r) => r.uid === uid);
      return row && { ...row, entries: Number(row.entries) };
    });
  };
  const eventsOf = (key: string) =>
    store().query<{ type: string; object_uid: string; request_id: string }>(
      `SELECT type, object_uid, request_id FROM (
         SELECT type, object_uid, request_id FROM event_outbox WHERE org_id = $1 AND idempotency_key = $2
         UNION ALL SELECT type, object_uid, request_id FROM events WHERE org_id = $1 AND idempotency_key = $2) e
        ORDER BY type`,
      [writer().org.id, key],
    );
});

function cents(amount: string | undefined): number {
  return Math.round(Number(amount) * 100);
}
