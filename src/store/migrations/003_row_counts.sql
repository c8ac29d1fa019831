-- Exact, real-time row counts per organization, so the count of an
-- unfiltered list (page 1 of an organization holding millions) is one
-- primary-key lookup instead of count(*) over millions of index entries.
--
-- row_counts holds one row per (organization, table). Statement-level
-- triggers with transition tables keep it exact for every write path: a
-- single INSERT, a multi-row INSERT … SELECT, COPY, INSERT … ON CONFLICT DO
-- UPDATE (only the rows actually inserted are in the INSERT transition table,
-- so an upsert never counts a row twice), DELETE and TRUNCATE. The counter
-- changes in the writer's own transaction, so it commits or rolls back with
-- the rows it counts.
--
-- Concurrency: the increment is an upsert on the counter row, so two
-- transactions writing the same organization's table serialize on that row
-- from their write until commit (different organizations never contend).
-- Writes here are bulk imports (one statement per batch) and ledger updates
-- (which change no count and touch no counter), so this never bites; a
-- workload of many concurrent single-row inserts into one organization would
-- want per-connection delta rows summed on read instead.

CREATE TABLE row_counts (
  table_name text COLLATE "C" NOT NULL,
  org_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  row_count bigint NOT NULL CHECK (row_count >= 0),
  PRIMARY KEY (org_id, table_name)
) WITH (fillfactor = 10);
-- Every write statement updates a counter row: mostly-empty pages keep those
-- updates HOT (no index churn), and spread the table over enough pages that
-- the planner reads a counter through its primary key, never by scanning.

CREATE FUNCTION row_counts_add_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Counter rows are locked in org_id order, so two multi-organization
  -- statements cannot deadlock on them.
  INSERT INTO row_counts AS c (table_name, org_id, row_count)
  SELECT TG_TABLE_NAME, org_id, count(*) FROM inserted_rows GROUP BY org_id ORDER BY org_id
  ON CONFLICT (org_id, table_name) DO UPDATE SET row_count = c.row_count + excluded.row_count;
  RETURN NULL;
END
$$;

CREATE FUNCTION row_counts_subtract_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE row_counts AS c SET row_count = c.row_count - d.n
    FROM (SELECT org_id, count(*) AS n FROM deleted_rows GROUP BY org_id ORDER BY org_id) d
   WHERE c.table_name = TG_TABLE_NAME AND c.org_id = d.org_id;
  RETURN NULL;
END
$$;

CREATE FUNCTION row_counts_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM row_counts WHERE table_name = TG_TABLE_NAME;
  RETURN NULL;
END
$$;

-- A row moving between organizations would leave both counts wrong (and
-- nothing in the service does it), so it is refused.
CREATE FUNCTION row_counts_forbid_org_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%.org_id cannot change (row %)', TG_TABLE_NAME, OLD.id;
END
$$;

-- Counts of what is already there, taken while writers wait.
LOCK TABLE payment_methods, credit_limits IN SHARE MODE;
INSERT INTO row_counts (table_name, org_id, row_count)
SELECT 'payment_methods', org_id, count(*) FROM payment_methods GROUP BY org_id;
INSERT INTO row_counts (table_name, org_id, row_count)
SELECT 'credit_limits', org_id, count(*) FROM credit_limits GROUP BY org_id;

CREATE TRIGGER payment_methods_count_inserts AFTER INSERT ON payment_methods
  REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_add_inserted();
CREATE TRIGGER payment_methods_count_deletes AFTER DELETE ON payment_methods
  REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_subtract_deleted();
CREATE TRIGGER payment_methods_count_truncate AFTER TRUNCATE ON payment_methods
  FOR EACH STATEMENT EXECUTE FUNCTION row_counts_reset();
CREATE TRIGGER payment_methods_org_fixed BEFORE UPDATE OF org_id ON payment_methods
  FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id) EXECUTE FUNCTION row_counts_forbid_org_change();

CREATE TRIGGER credit_limits_count_inserts AFTER INSERT ON credit_limits
  REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_add_inserted();
CREATE TRIGGER credit_limits_count_deletes AFTER DELETE ON credit_limits
  REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_subtract_deleted();
CREATE TRIGGER credit_limits_count_truncate AFTER TRUNCATE ON credit_limits
  FOR EACH STATEMENT EXECUTE FUNCTION row_counts_reset();
CREATE TRIGGER credit_limits_org_fixed BEFORE UPDATE OF org_id ON credit_limits
  FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id) EXECUTE FUNCTION row_counts_forbid_org_change();
