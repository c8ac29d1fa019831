import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { json, useApp } from '../../helpers/app.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant, type Tenant } from '../../helpers/tenants.js';
import { ledgerState, postEntry } from '../../helpers/writes.js';

const LIMIT_COUNT = 3;
const CAPACITY_CENTS = 10_000;

type Step =
  | { op: 'write'; kind: 'drawdown' | 'repayment'; limit: number; cents: number }
  /** Sends again, with the same Idempotency-Key and body, the write made `back` writes ago (if any). */
  | { op: 'retry'; back: number }
  | { op: 'read'; limit: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('write' as const), kind: fc.constantFrom('drawdown' as const, 'repayment' as const), limit: fc.nat(LIMIT_COUNT - 1), cents: fc.integer({ min: 1, max: 6000 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('retry' as const), back: fc.nat(8) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('read' as const), limit: fc.nat(LIMIT_COUNT - 1) }) },
);
/** Batches of steps; the steps of one batch run concurrently. */
const program = fc.array(fc.array(step, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 });

interface Sent {
  readonly key: string;
  readonly kind: 'drawdown' | 'repayment';
  readonly limit: number;
  readonly cents: number;
  answers: LightMyRequestResponse[];
}

const cents = (amount: number) => Math.round(amount * 100);

describeEachStore('HTTP writes against a model', (store) => {
  const app = useApp(store);
  let writer: Tenant;
  let run = 0;

  beforeAll(async () => {
    writer = await createTenant(store(), 'Model', 'write');
  });

  it('keeps every limit equal to the model under concurrent writes, retries and reads: no negative balance, each key written once', async () => {
    await fc.assert(
      fc.asyncProperty(program, async (batches) => {
        run += 1;
        const uids = Array.from({ length: LIMIT_COUNT }, (_, i) => `cl_model_${run}_${i}`);
        await insertCreditLimits(store(), writer.org.id, uids.map((uid) => creditLimit({ uid, capacity: (CAPACITY_CENTS / 100).toFixed(2) })));
        const model = uids.map(() => 0);
        const sent: Sent[] = [];
        const counted = new Set<Sent>();

        for (const batch of batches) {
          const before = [...model];
          const calls = batch.map(async (s) => {
            if (s.op === 'read') {
              const limit = json<{ outstanding: number; balance: number; capacity: number }>(
                await app().inject({ url: `/api/limits/${uids[s.limit]}/`, headers: { authorization: writer.authorization } }),
              );
              expect(limit.balance).toBeGreaterThanOrEqual(0);
              expect(limit.outstanding).toBeGreaterThanOrEqual(0);
              expect(cents(limit.outstanding) + cents(limit.balance)).toBe(cents(limit.capacity));
              return;
            }
            let target: Sent | undefined;
            if (s.op === 'retry') target = sent[sent.length - 1 - s.back];
            else {
              target = { key: `model-${run}-${sent.length}`, kind: s.kind, limit: s.limit, cents: s.cents, answers: [] };
              sent.push(target);
            }
            if (!target) return;
            const answer = await postEntry(app(), target.kind, uids[target.limit]!, { amount: (target.cents / 100).toFixed(2) }, {
              authorization: writer.authorization,
              idempotencyKey: target.key,
            });
            target.answers.push(answer);
          });
          await Promise.all(calls);

          // Each key ran once: its answers are one and the same, 201 or 409 only.
          for (const call of sent) {
            const statuses = new Set(call.answers.map((answer) => answer.statusCode));
            expect(statuses.size).toBeLessThanOrEqual(1);
            expect(new Set(call.answers.map((answer) => answer.body)).size).toBeLessThanOrEqual(1);
            for (const status of statuses) expect([201, 409]).toContain(status);
            expect(call.answers.filter((answer) => answer.headers['idempotent-replayed'] !== 'true').length).toBeLessThanOrEqual(1);
          }
          // The model: the limits before the batch plus every write of it that succeeded, each counted once.
          const fresh = sent.filter((call) => call.answers.length > 0 && !counted.has(call));
          for (const call of fresh) {
            counted.add(call);
            if (call.answers[0]?.statusCode === 201) model[call.limit]! += call.kind === 'drawdown' ? call.cents : -call.cents;
          }
          // A refusal is justified: in no order of the batch's successes could the refused write have fitted.
          for (const call of fresh.filter((c) => c.answers[0]?.statusCode === 409)) {
            const succeeded = fresh.filter((c) => c.limit === call.limit && c.answers[0]?.statusCode === 201);
            const sum = (kind: Sent['kind']) => succeeded.filter((c) => c.kind === kind).reduce((total, c) => total + c.cents, 0);
            if (call.kind === 'drawdown') expect(before[call.limit]! + sum('drawdown') + call.cents).toBeGreaterThan(CAPACITY_CENTS);
            else expect(before[call.limit]! - sum('repayment')).toBeLessThan(call.cents);
          }
          for (let i = 0; i < LIMIT_COUNT; i += 1) {
            expect(model[i]).toBeGreaterThanOrEqual(0);
            expect(model[i]).toBeLessThanOrEqual(CAPACITY_CENTS);
          }
        }

        for (let i = 0; i < LIMIT_COUNT; i += 1) {
          const state = await ledgerState(store(), writer.org.id, uids[i]!);
          expect(cents(Number(state.outstanding))).toBe(model[i]);
          const written = sent.filter((call) => call.limit === i && call.answers[0]?.statusCode === 201).length;
          expect(state.entries).toBe(written);
        }
      }),
      { numRuns: 12 },
    );
  }, 900_000);
});
