-- Ledger entries as a listed collection: GET /api/limits/{uid}/entries/
-- (docs/api.md "Entries"), served by the generic list engine.
--
-- The engine breaks ties in every ordering by a unique bigint row id and
-- finds a page's rows by it (docs/architecture.md). An entry's own id is the
-- caller's text key, in the database's collation: its order differs between
-- servers (PGlite and PostgreSQL sort it differently, see merge-ledger.ts),
-- so it cannot be a stable tie-breaker. seq is: unique, total, and in the
-- order entries were recorded (an import inserts in file order), so entries
-- recorded in one transaction, which share recorded_at, list newest first
-- too. UNIQUE (seq, org_id) makes it a key (sharding-ready: org_id in every
-- key) and finds a page's rows by seq.
ALTER TABLE ledger_entries ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_seq_key UNIQUE (seq, org_id);

-- One index per ordering, inside one limit: created_at (recorded_at, the
-- default, newest first) and at. They also serve the foreign key's lookups
-- from credit_limits (limit_id, org_id), so the old (limit_id, at) index,
-- which led with limit_id instead of org_id, goes.
DROP INDEX ledger_entries_limit_idx;
CREATE INDEX ledger_entries_limit_recorded_idx ON ledger_entries (org_id, limit_id, recorded_at, seq);
CREATE INDEX ledger_entries_limit_at_idx ON ledger_entries (org_id, limit_id, at, seq);
