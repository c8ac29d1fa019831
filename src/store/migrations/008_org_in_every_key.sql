-- Sharding-ready keys (docs/scaling.md): a distributed PostgreSQL that shards
-- the records by org_id (Citus-style) needs every primary key, unique
-- constraint and foreign key of a sharded table to include org_id, so each is
-- enforced inside one shard. organizations and api_keys stay whole on every
-- node (reference tables) and keep their keys.
--
-- The keys lead with id, not org_id: a lookup by row id alone (the list
-- engine's page rows, the ledger's limit) still uses the same one index,
-- and no index is added.

ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_limit_id_fkey;

ALTER TABLE payment_methods DROP CONSTRAINT payment_methods_pkey;
ALTER TABLE payment_methods ADD CONSTRAINT payment_methods_pkey PRIMARY KEY (id, org_id);

ALTER TABLE credit_limits DROP CONSTRAINT credit_limits_pkey;
ALTER TABLE credit_limits ADD CONSTRAINT credit_limits_pkey PRIMARY KEY (id, org_id);

ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_limit_id_fkey
  FOREIGN KEY (limit_id, org_id) REFERENCES credit_limits (id, org_id);
