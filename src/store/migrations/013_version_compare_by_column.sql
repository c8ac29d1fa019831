-- A table with unversioned columns (credit_limits: outstanding, balance,
-- updated_at) gets a version comparison of its own: the generic
-- row_counts_bump_changed() turned every old and new row into jsonb to drop
-- those columns before comparing, for every drawdown and repayment (which
-- change nothing else) and for each limit an import's ledger lines move —
-- about a quarter of that UPDATE (docs/import.md, round four). The generated
-- function compares the versioned columns themselves.
--
-- The column list is read from the catalog when the function is generated,
-- so a column added to the table later is not compared until it is
-- generated again: the start-up schema check (src/listing/schema-check.ts)
-- compares the installed source with row_counts_version_source() for the
-- table as it is, and names the call that installs it again. Tables whose
-- every column moves the version keep row_counts_bump_changed() (it needs no
-- list).

-- The body of <table>_bump_changed() for the table's columns now.
CREATE FUNCTION row_counts_version_source(tracked regclass, unversioned_columns text[]) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT format($body$
BEGIN
  UPDATE row_counts AS c SET version = c.version + 1
    FROM (SELECT DISTINCT n.org_id
            FROM updated_new n JOIN updated_old o ON o.id = n.id
           WHERE ROW(%s) IS DISTINCT FROM ROW(%s)
           ORDER BY n.org_id) u
   WHERE c.table_name = %L AND c.org_id = u.org_id;
  RETURN NULL;
END
$body$,
    string_agg('n.' || quote_ident(a.attname), ', ' ORDER BY a.attnum),
    string_agg('o.' || quote_ident(a.attname), ', ' ORDER BY a.attnum),
    (SELECT relname FROM pg_class WHERE oid = tracked))
  FROM pg_attribute a
  WHERE a.attrelid = tracked AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> ALL (unversioned_columns)
$$;

-- (Re)installs a table's version trigger. Its arguments stay the unversioned
-- columns, which the schema check compares with the definition's volatileFields.
CREATE FUNCTION row_counts_version_trigger(tracked regclass, unversioned_columns text[] DEFAULT '{}') RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  table_name text := (SELECT relname FROM pg_class WHERE oid = tracked);
  arguments text := (SELECT coalesce(string_agg(quote_literal(col), ', '), '') FROM unnest(unversioned_columns) AS col);
  comparison text := 'row_counts_bump_changed';
BEGIN
  IF cardinality(unversioned_columns) > 0 THEN
    comparison := table_name || '_bump_changed';
    EXECUTE format('CREATE OR REPLACE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql AS %L',
                   comparison, row_counts_version_source(tracked, unversioned_columns));
  END IF;
  EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', table_name || '_version_updates', tracked);
  EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS updated_old NEW TABLE AS updated_new
                  FOR EACH STATEMENT EXECUTE FUNCTION %I(%s)', table_name || '_version_updates', tracked, comparison, arguments);
END
$$;

CREATE OR REPLACE FUNCTION row_counts_track(tracked regclass, unversioned_columns text[] DEFAULT '{}') RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  table_name text := (SELECT relname FROM pg_class WHERE oid = tracked);
  missing text := (SELECT string_agg(col, ', ') FROM unnest(unversioned_columns) AS col
                    WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a
                                       WHERE a.attrelid = tracked AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped));
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
  PERFORM row_counts_version_trigger(tracked, unversioned_columns);
END
$$;

SELECT row_counts_version_trigger('credit_limits', '{outstanding,balance,updated_at}');
