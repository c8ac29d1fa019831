-- Ledger entries without per-row foreign keys (docs/import.md, "Ledger
-- lines"). Each inserted entry fired two RI triggers — a SELECT … FOR KEY
-- SHARE on its organization and one on its credit limit —, measured at
-- 40–55% of an import's INSERT of entries. The same guarantees, per
-- statement instead of per row:
--
-- 1. An entry always names an existing credit limit of its own organization:
--    after each INSERT into ledger_entries, one statement locks the distinct
--    limits the new entries name (FOR KEY SHARE, in id order, as the RI
--    trigger did row by row) and refuses the whole statement if one is
--    missing. A limit deleted by a concurrent transaction that commits first
--    is not locked (the count differs: refused); one deleted after is kept
--    (the delete waits for the lock, then finds the entry, rule 2).
--    The import and draw/repay already hold the limit FOR UPDATE by then, so
--    the lock costs no write. The entry's organization exists because its
--    limit does (an organization with credit limits cannot be deleted: 004).
-- 2. A credit limit with entries cannot be deleted (statement-level check of
--    the deleted rows) nor truncated while any entry exists; a limit's id and
--    an entry's limit_id/org_id cannot change (a limit's org_id already
--    cannot: 006).
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_limit_id_fkey;
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_org_id_fkey;

CREATE FUNCTION ledger_entries_require_limits() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  named bigint;
  locked bigint;
BEGIN
  WITH named_limits AS MATERIALIZED (SELECT DISTINCT limit_id, org_id FROM new_entries),
       locked_limits AS (SELECT c.id FROM credit_limits c JOIN named_limits n ON n.limit_id = c.id AND n.org_id = c.org_id
                          ORDER BY c.id FOR KEY SHARE OF c)
  SELECT (SELECT count(*) FROM named_limits), (SELECT count(*) FROM locked_limits) INTO named, locked;
  IF locked <> named THEN
    RAISE EXCEPTION 'a ledger entry must name an existing credit limit of its own organization'
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER ledger_entries_require_limits AFTER INSERT ON ledger_entries
  REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT
  EXECUTE FUNCTION ledger_entries_require_limits();

CREATE FUNCTION ledger_entries_refuse_change_of_limit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a ledger entry''s limit_id and org_id cannot change' USING ERRCODE = 'foreign_key_violation';
END
$$;
CREATE TRIGGER ledger_entries_limit_fixed BEFORE UPDATE OF limit_id, org_id ON ledger_entries FOR EACH ROW
  WHEN (OLD.limit_id IS DISTINCT FROM NEW.limit_id OR OLD.org_id IS DISTINCT FROM NEW.org_id)
  EXECUTE FUNCTION ledger_entries_refuse_change_of_limit();

CREATE FUNCTION credit_limits_refuse_delete_with_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM deleted_limits d
              WHERE EXISTS (SELECT 1 FROM ledger_entries e WHERE e.org_id = d.org_id AND e.limit_id = d.id)) THEN
    RAISE EXCEPTION 'a credit limit that has ledger entries cannot be deleted' USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER credit_limits_keep_entries AFTER DELETE ON credit_limits
  REFERENCING OLD TABLE AS deleted_limits FOR EACH STATEMENT
  EXECUTE FUNCTION credit_limits_refuse_delete_with_entries();

CREATE FUNCTION credit_limits_refuse_truncate_with_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM ledger_entries) THEN
    RAISE EXCEPTION 'credit_limits cannot be truncated while ledger_entries has rows (truncate ledger_entries first)'
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER credit_limits_keep_entries_on_truncate BEFORE TRUNCATE ON credit_limits
  FOR EACH STATEMENT EXECUTE FUNCTION credit_limits_refuse_truncate_with_entries();

CREATE FUNCTION credit_limits_refuse_id_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a credit limit''s id cannot change' USING ERRCODE = 'foreign_key_violation';
END
$$;
CREATE TRIGGER credit_limits_id_fixed BEFORE UPDATE OF id ON credit_limits FOR EACH ROW
  WHEN (OLD.id IS DISTINCT FROM NEW.id)
  EXECUTE FUNCTION credit_limits_refuse_id_change();
