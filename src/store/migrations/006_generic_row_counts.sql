-- Row counts and versions for any table, from one call per table:
--
--   SELECT row_counts_track('loans');                                 -- every change moves the version
--   SELECT row_counts_track('credit_limits', '{outstanding,balance,updated_at}');
--
-- The shared trigger functions name no table and no column: the table comes
-- from TG_TABLE_NAME and the columns whose changes do NOT move the version
-- come from the trigger's arguments (TG_ARGV), which row_counts_track() sets
-- from its second argument. The resource definition's volatileFields must
-- name the same columns; the start-up schema check (src/listing/schema-check.ts)
-- refuses to serve a definition that disagrees with the installed triggers.
--
-- A tracked table has the columns id (unique) and org_id.

-- Updates: the version moves for the organizations where a row changed in a
-- column not listed in the trigger's arguments (old and new rows are
-- compared, so an update that only moves unversioned columns, such as a
-- drawdown, takes no lock on the counter row).
CREATE OR REPLACE FUNCTION row_counts_bump_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  unversioned text[] := coalesce(TG_ARGV, '{}');  -- TG_ARGV is null when the trigger has no arguments
BEGIN
  UPDATE row_counts AS c SET version = c.version + 1
    FROM (SELECT DISTINCT n.org_id
            FROM updated_new n JOIN updated_old o ON o.id = n.id
           WHERE (to_jsonb(n) - unversioned) IS DISTINCT FROM (to_jsonb(o) - unversioned)
           ORDER BY n.org_id) u
   WHERE c.table_name = TG_TABLE_NAME AND c.org_id = u.org_id;
  RETURN NULL;
END
$$;

-- Seeds the counts of what the table already holds (while writers wait) and
-- installs the counting, version and org_id-guard triggers on it.
CREATE FUNCTION row_counts_track(tracked regclass, unversioned_columns text[] DEFAULT '{}') RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  table_name text := (SELECT relname FROM pg_class WHERE oid = tracked);
  missing text := (SELECT string_agg(col, ', ') FROM unnest(unversioned_columns) AS col
                    WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a
                                       WHERE a.attrelid = tracked AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped));
  arguments text := (SELECT coalesce(string_agg(quote_literal(col), ', '), '') FROM unnest(unversioned_columns) AS col);
BEGIN
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'row_counts_track(%): no column % in the table', table_name, missing;
  END IF;
  EXECUTE format('LOCK TABLE %s IN SHARE MODE', tracked);
  EXECUTE format('INSERT INTO row_counts (table_name, org_id, row_count) SELECT %L, org_id, count(*) FROM %s GROUP BY org_id',
                 table_name, tracked);
  EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS inserted_rows
                  FOR EACH STATEMENT EXECUTE FUNCTION row_counts_add_inserted()', table_name || '_count_inserts', tracked);
  EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS deleted_rows
                  FOR EACH STATEMENT EXECUTE FUNCTION row_counts_subtract_deleted()', table_name || '_count_deletes', tracked);
  EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s
                  FOR EACH STATEMENT EXECUTE FUNCTION row_counts_reset()', table_name || '_count_truncate', tracked);
  EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OF org_id ON %s FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id)
                  EXECUTE FUNCTION row_counts_forbid_org_change()', table_name || '_org_fixed', tracked);
  EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS updated_old NEW TABLE AS updated_new
                  FOR EACH STATEMENT EXECUTE FUNCTION row_counts_bump_changed(%s)', table_name || '_version_updates', tracked, arguments);
END
$$;

-- The two existing tables keep their behaviour, now declared by arguments:
-- every change of a payment method moves the version (its trigger has no
-- arguments); ledger entries move only these three columns of a credit limit.
DROP TRIGGER credit_limits_version_updates ON credit_limits;
CREATE TRIGGER credit_limits_version_updates AFTER UPDATE ON credit_limits
  REFERENCING OLD TABLE AS updated_old NEW TABLE AS updated_new
  FOR EACH STATEMENT EXECUTE FUNCTION row_counts_bump_changed('outstanding', 'balance', 'updated_at');
