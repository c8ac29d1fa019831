-- The statement-level triggers, rewritten so that they are right on the
-- shards of a distributed PostgreSQL (Citus, docs/scaling.md "Sharding")
-- and do exactly what they did on PostgreSQL and PGlite.
--
-- On Citus a trigger of a distributed table fires on each shard, on the
-- worker that holds it, and two things there differ from one server:
--
-- 1. TG_TABLE_NAME is the shard's name (payment_methods_102020), not the
--    table's: row_counts_table_of() reads the table's name from Citus's
--    catalog on a shard, and is TG_TABLE_NAME everywhere else.
-- 2. A statement in the trigger that reads the transition table AND a
--    distributed table (INSERT INTO row_counts … SELECT … FROM
--    inserted_rows) is planned as a distributed query, which cannot see the
--    transition table ("could not find named tuplestore"). So each trigger
--    first reads the transition table alone (one row per organization the
--    statement touched: one, for everything the service runs), then runs one
--    statement per organization with plain values, constrained by org_id:
--    on Citus that is a router statement on the co-located shard, which
--    lives on the same worker (a trigger on a shard may only reach those).
--
-- Organizations are still visited in org_id order, so two statements that
-- touch several organizations lock their counter rows in the same order.

CREATE FUNCTION row_counts_table_of(relation_id oid, relation_name name) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
  logical text;
BEGIN
  -- A shard is named <table>_<shard id>; nothing else needs the catalog lookup.
  IF relation_name !~ '_[0-9]+$' OR to_regclass('pg_catalog.pg_dist_shard') IS NULL THEN
    RETURN relation_name;
  END IF;
  EXECUTE 'SELECT c.relname::text FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_class c ON c.oid = s.logicalrelid
            WHERE s.shardid = $1 AND c.relname || ''_'' || s.shardid = $2'
     INTO logical USING substring(relation_name FROM '_([0-9]+)$')::bigint, relation_name::text;
  RETURN coalesce(logical, relation_name);
END
$$;

CREATE OR REPLACE FUNCTION row_counts_add_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  counted_table text := row_counts_table_of(TG_RELID, TG_TABLE_NAME);
  counted record;
BEGIN
  FOR counted IN SELECT org_id, count(*) AS n FROM inserted_rows GROUP BY org_id ORDER BY org_id LOOP
    INSERT INTO row_counts AS c (table_name, org_id, row_count, version) VALUES (counted_table, counted.org_id, counted.n, 1)
    ON CONFLICT (org_id, table_name) DO UPDATE SET row_count = c.row_count + excluded.row_count, version = c.version + 1;
  END LOOP;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_subtract_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  counted_table text := row_counts_table_of(TG_RELID, TG_TABLE_NAME);
  counted record;
BEGIN
  FOR counted IN SELECT org_id, count(*) AS n FROM deleted_rows GROUP BY org_id ORDER BY org_id LOOP
    UPDATE row_counts AS c SET row_count = c.row_count - counted.n, version = c.version + 1
     WHERE c.org_id = counted.org_id AND c.table_name = counted_table;
  END LOOP;
  RETURN NULL;
END
$$;

-- Citus keeps TRUNCATE triggers on the distributed table itself (on the
-- coordinator), never on shards, so this one may reach every organization.
CREATE OR REPLACE FUNCTION row_counts_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE row_counts SET row_count = 0, version = version + 1 WHERE table_name = row_counts_table_of(TG_RELID, TG_TABLE_NAME);
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_forbid_org_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%.org_id cannot change (row %)', row_counts_table_of(TG_RELID, TG_TABLE_NAME), OLD.id;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_bump_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  unversioned text[] := coalesce(TG_ARGV, '{}');  -- TG_ARGV is null when the trigger has no arguments
  counted_table text := row_counts_table_of(TG_RELID, TG_TABLE_NAME);
  changed record;
BEGIN
  FOR changed IN SELECT DISTINCT n.org_id
                   FROM updated_new n JOIN updated_old o ON o.id = n.id
                  WHERE (to_jsonb(n) - unversioned) IS DISTINCT FROM (to_jsonb(o) - unversioned)
                  ORDER BY n.org_id LOOP
    UPDATE row_counts AS c SET version = c.version + 1 WHERE c.org_id = changed.org_id AND c.table_name = counted_table;
  END LOOP;
  RETURN NULL;
END
$$;

-- The generated comparison of migration 013, in the same shape.
CREATE OR REPLACE FUNCTION row_counts_version_source(tracked regclass, unversioned_columns text[]) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT format($body$
DECLARE
  changed record;
BEGIN
  FOR changed IN SELECT DISTINCT n.org_id
                   FROM updated_new n JOIN updated_old o ON o.id = n.id
                  WHERE ROW(%s) IS DISTINCT FROM ROW(%s)
                  ORDER BY n.org_id LOOP
    UPDATE row_counts AS c SET version = c.version + 1 WHERE c.org_id = changed.org_id AND c.table_name = %L;
  END LOOP;
  RETURN NULL;
END
$body$,
    string_agg('n.' || quote_ident(a.attname), ', ' ORDER BY a.attnum),
    string_agg('o.' || quote_ident(a.attname), ', ' ORDER BY a.attnum),
    (SELECT relname FROM pg_class WHERE oid = tracked))
  FROM pg_attribute a
  WHERE a.attrelid = tracked AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> ALL (unversioned_columns)
$$;

-- Every table whose version trigger runs a generated comparison gets it again.
DO $$
DECLARE
  generated record;
BEGIN
  FOR generated IN
    SELECT t.tgrelid::regclass AS tracked,
           coalesce((SELECT array_agg(arg) FROM unnest(string_to_array(encode(t.tgargs, 'escape'), '\000')) AS arg WHERE arg <> ''), '{}') AS unversioned
      FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
     WHERE NOT t.tgisinternal AND p.proname = (SELECT relname FROM pg_class WHERE oid = t.tgrelid) || '_bump_changed'
       AND t.tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)
  LOOP
    PERFORM row_counts_version_trigger(generated.tracked, generated.unversioned);
  END LOOP;
END
$$;

-- Ledger entries name an existing credit limit of their own organization
-- (migration 012): the limits are locked organization by organization.
CREATE OR REPLACE FUNCTION ledger_entries_require_limits() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  named record;
  locked bigint;
BEGIN
  FOR named IN SELECT org_id, array_agg(DISTINCT limit_id ORDER BY limit_id) AS limit_ids
                 FROM new_entries GROUP BY org_id ORDER BY org_id LOOP
    PERFORM 1 FROM credit_limits c WHERE c.org_id = named.org_id AND c.id = ANY (named.limit_ids) ORDER BY c.id FOR KEY SHARE;
    GET DIAGNOSTICS locked = ROW_COUNT;
    IF locked <> cardinality(named.limit_ids) THEN
      RAISE EXCEPTION 'a ledger entry must name an existing credit limit of its own organization'
        USING ERRCODE = 'foreign_key_violation';
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION credit_limits_refuse_delete_with_entries() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  deleted record;
BEGIN
  FOR deleted IN SELECT org_id, array_agg(id) AS limit_ids FROM deleted_limits GROUP BY org_id ORDER BY org_id LOOP
    IF EXISTS (SELECT 1 FROM ledger_entries e WHERE e.org_id = deleted.org_id AND e.limit_id = ANY (deleted.limit_ids)) THEN
      RAISE EXCEPTION 'a credit limit that has ledger entries cannot be deleted' USING ERRCODE = 'foreign_key_violation';
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION organizations_refuse_delete_with_records() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  deleted record;
BEGIN
  FOR deleted IN SELECT id FROM deleted_organizations ORDER BY id LOOP
    IF EXISTS (SELECT 1 FROM payment_methods p WHERE p.org_id = deleted.id)
       OR EXISTS (SELECT 1 FROM credit_limits c WHERE c.org_id = deleted.id) THEN
      RAISE EXCEPTION 'an organization that has payment methods or credit limits cannot be deleted'
        USING ERRCODE = 'foreign_key_violation';
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;

-- The trigger functions name their tables without a schema, and on Citus
-- they run on a worker's shard in a session whose search_path is the
-- worker's default, not the one the statement came with: a schema other
-- than public would have its counts written to public's tables. Each
-- function keeps the schema this migration runs in as its search_path,
-- wherever it runs; on one server that is the schema it already ran in.
-- (Named, not FROM CURRENT, which Citus cannot propagate.)
DO $$
DECLARE
  fn regprocedure;
BEGIN
  FOR fn IN
    SELECT p.oid::regprocedure FROM pg_proc p
     WHERE p.pronamespace = current_schema()::regnamespace
       AND (p.proname IN ('row_counts_add_inserted', 'row_counts_subtract_deleted', 'row_counts_reset', 'row_counts_bump_changed',
                          'ledger_entries_require_limits', 'credit_limits_refuse_delete_with_entries',
                          'credit_limits_refuse_truncate_with_entries', 'organizations_refuse_delete_with_records')
            OR p.oid IN (SELECT t.tgfoid FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
                          WHERE NOT t.tgisinternal AND p.proname = c.relname || '_bump_changed'))
  LOOP
    EXECUTE format('ALTER FUNCTION %s SET search_path = %I', fn, current_schema());
  END LOOP;
END
$$;

-- The generated comparisons too, when they are generated again.
CREATE OR REPLACE FUNCTION row_counts_version_trigger(tracked regclass, unversioned_columns text[] DEFAULT '{}') RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  table_name text := (SELECT relname FROM pg_class WHERE oid = tracked);
  arguments text := (SELECT coalesce(string_agg(quote_literal(col), ', '), '') FROM unnest(unversioned_columns) AS col);
  comparison text := 'row_counts_bump_changed';
BEGIN
  IF cardinality(unversioned_columns) > 0 THEN
    comparison := table_name || '_bump_changed';
    EXECUTE format('CREATE OR REPLACE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql SET search_path = %I AS %L',
                   comparison, (SELECT nspname FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid WHERE c.oid = tracked),
                   row_counts_version_source(tracked, unversioned_columns));
  END IF;
  EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', table_name || '_version_updates', tracked);
  EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS updated_old NEW TABLE AS updated_new
                  FOR EACH STATEMENT EXECUTE FUNCTION %I(%s)', table_name || '_version_updates', tracked, comparison, arguments);
END
$$;
