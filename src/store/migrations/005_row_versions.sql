-- A version per (organization, table) next to its row count: it moves with
-- every statement that can change which rows a list holds or their order,
-- in the writer's own transaction. A reader that sees the same version in
-- its snapshot sees the same rows, so the list engine may reuse an exact
-- count, or where a deep page starts, that it computed at that version
-- (docs/performance.md).
--
-- What moves it: inserts, deletes and truncation (through the triggers of
-- 003), and updates that change a row. Ledger entries change only
-- outstanding, balance and updated_at of credit limits; those changes do not
-- move it (they would serialize every drawdown of an organization on this
-- row), so the engine never reuses anything for a credit-limit list filtered
-- or ordered by outstanding, balance or updated_at (the resource definition
-- lists them as volatile).
--
-- The version never goes back: a truncated table keeps its counter rows, at
-- zero rows and a newer version; a new counter row starts at version 1, as
-- a missing one reads as 0.

ALTER TABLE row_counts ADD COLUMN version bigint NOT NULL DEFAULT 1;

CREATE OR REPLACE FUNCTION row_counts_add_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Counter rows are locked in org_id order, so two multi-organization
  -- statements cannot deadlock on them.
  INSERT INTO row_counts AS c (table_name, org_id, row_count, version)
  SELECT TG_TABLE_NAME, org_id, count(*), 1 FROM inserted_rows GROUP BY org_id ORDER BY org_id
  ON CONFLICT (org_id, table_name) DO UPDATE SET row_count = c.row_count + excluded.row_count, version = c.version + 1;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_subtract_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE row_counts AS c SET row_count = c.row_count - d.n, version = c.version + 1
    FROM (SELECT org_id, count(*) AS n FROM deleted_rows GROUP BY org_id ORDER BY org_id) d
   WHERE c.table_name = TG_TABLE_NAME AND c.org_id = d.org_id;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE row_counts SET row_count = 0, version = version + 1 WHERE table_name = TG_TABLE_NAME;
  RETURN NULL;
END
$$;

-- Updates: the version moves for the organizations where a row changed in
-- something other than what ledger entries move (old and new rows are
-- compared, so a drawdown takes no lock here and changes nothing).
CREATE FUNCTION row_counts_bump_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE row_counts AS c SET version = c.version + 1
    FROM (SELECT DISTINCT n.org_id
            FROM updated_new n JOIN updated_old o ON o.id = n.id
           WHERE (to_jsonb(n) - 'outstanding' - 'balance' - 'updated_at') IS DISTINCT FROM
                 (to_jsonb(o) - 'outstanding' - 'balance' - 'updated_at')
              OR (TG_TABLE_NAME = 'payment_methods' AND n.updated_at IS DISTINCT FROM o.updated_at)
           ORDER BY n.org_id) u
   WHERE c.table_name = TG_TABLE_NAME AND c.org_id = u.org_id;
  RETURN NULL;
END
$$;

CREATE TRIGGER payment_methods_version_updates AFTER UPDATE ON payment_methods
  REFERENCING OLD TABLE AS updated_old NEW TABLE AS updated_new
  FOR EACH STATEMENT EXECUTE FUNCTION row_counts_bump_changed();
CREATE TRIGGER credit_limits_version_updates AFTER UPDATE ON credit_limits
  REFERENCING OLD TABLE AS updated_old NEW TABLE AS updated_new
  FOR EACH STATEMENT EXECUTE FUNCTION row_counts_bump_changed();
