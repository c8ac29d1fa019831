-- The database's share of one HTTP drawdown, for pgbench: the statements the
-- service sends (src/ledger/entry-operation.ts and idempotency-keys.ts), with no service in between — the
-- ceiling of the write scenarios (docs/performance.md, "Writes").
-- Against a database the bench has loaded (it has the bench_writes organization):
--   pgbench -n -M prepared -c 32 -j 2 -T 15 -f bench/write-ceiling.sql \
--     -D org=$(psql -Atc "SELECT id FROM organizations WHERE uid = 'bench_writes'") -D spread=1000 <database>
-- -D spread=1000 is (w1), drawdowns over 1,000 limits; -D spread=1 is (w2), one hot limit.
-- It writes what the bench does: one entry and one stored response per transaction.
\set k random(0, :spread - 1)
\set r random(1, 1000000000000)
BEGIN;
SET LOCAL synchronous_commit = remote_apply;
WITH claimed AS (INSERT INTO idempotency_keys (org_id, idempotency_key, request_fingerprint, key_id, expires_at) VALUES (:org, 'pgbench-' || :client_id || '-' || :r, repeat('a', 64), 'key_0123456789abcdef', now() + interval '24 hours') ON CONFLICT (org_id, idempotency_key) DO UPDATE SET response_status = NULL WHERE idempotency_keys.expires_at <= now() RETURNING 1), moved AS (UPDATE credit_limits t SET outstanding = t.outstanding + 1.00, updated_at = greatest(t.updated_at, now()) WHERE t.org_id = :org AND t.uid = 'cl_bench_w_' || :k AND t.outstanding + 1.00 <= t.capacity AND EXISTS (SELECT 1 FROM claimed) RETURNING t.id, t.uid, t.capacity::text, t.outstanding::text, t.balance::text), inserted AS (INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference) SELECT :org, 'dd_pgbench_' || :client_id || '_' || :r, id, 'drawdown', 1.00, now(), 'key_0123456789abcdef', NULL FROM moved RETURNING amount::text, recorded_at) SELECT * FROM moved, inserted;
UPDATE idempotency_keys SET response_status = 201, response_body = repeat('x', 700) WHERE org_id = :org AND idempotency_key = 'pgbench-' || :client_id || '-' || :r;
COMMIT;
