-- Joined writes name each record's cause (docs/performance.md "Writes"): the ledger writes a batch of lone
-- drawdowns and repayments to distinct limits in ONE statement (src/ledger/joined-entries.ts), so one
-- `lending.event_context` SET LOCAL must name the request of every record the statement changes. The
-- context may now hold `objects`: object type → uid → {request_id, idempotency_key}; a record's event takes its
-- cause from there when its uid is listed, else from the context's own members (as before: the import,
-- a write alone). The functions are otherwise those of 017_events.sql; they insert into event_outbox
-- only, with its columns named.
CREATE OR REPLACE FUNCTION events_record_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  object_type text := TG_ARGV[0];
  uid_column text := TG_ARGV[1];
  hidden text[] := events_hidden_columns(TG_RELID, TG_ARGV[2]::text[]);
  context jsonb := events_context();
  objects jsonb := context -> 'objects' -> object_type;
  changed record;
BEGIN
  IF NOT events_on_shards() THEN
    INSERT INTO event_outbox (org_id, type, object_uid, data_object, request_id, idempotency_key, import_id)
    SELECT r.org_id, object_type || '.created', r.object_uid, r.row_value - hidden,
           coalesce(objects -> r.object_uid, context) ->> 'request_id', coalesce(objects -> r.object_uid, context) ->> 'idempotency_key',
           context ->> 'import_id'
      FROM (SELECT i.org_id, to_jsonb(i) AS row_value, to_jsonb(i) ->> uid_column AS object_uid FROM inserted_rows i) r;
    RETURN NULL;
  END IF;
  -- On a shard, one statement per row with plain values (a router statement on the co-located shard).
  FOR changed IN SELECT i.org_id, to_jsonb(i) AS row_value, to_jsonb(i) ->> uid_column AS object_uid FROM inserted_rows i LOOP
    INSERT INTO event_outbox (org_id, type, object_uid, data_object, request_id, idempotency_key, import_id)
    VALUES (changed.org_id, object_type || '.created', changed.object_uid, changed.row_value - hidden,
            coalesce(objects -> changed.object_uid, context) ->> 'request_id',
            coalesce(objects -> changed.object_uid, context) ->> 'idempotency_key', context ->> 'import_id');
  END LOOP;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION events_record_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  object_type text := TG_ARGV[0];
  uid_column text := TG_ARGV[1];
  hidden text[] := events_hidden_columns(TG_RELID, TG_ARGV[2]::text[]);
  own_status text := CASE WHEN TG_NARGS > 3 THEN TG_ARGV[3] END;
  context jsonb := events_context();
  objects jsonb := context -> 'objects' -> object_type;
  changed record;
BEGIN
  IF NOT events_on_shards() THEN
    INSERT INTO event_outbox (org_id, type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id)
    SELECT c.org_id, c.type, c.object_uid, c.after, c.before,
           coalesce(objects -> c.object_uid, context) ->> 'request_id', coalesce(objects -> c.object_uid, context) ->> 'idempotency_key',
           context ->> 'import_id'
      FROM (SELECT n.org_id, p.after, c.before, p.after ->> uid_column AS object_uid,
                 CASE WHEN own_status IS NOT NULL AND p.after ->> 'status' = own_status AND c.before ? 'status'
                      THEN object_type || '.' || own_status ELSE object_type || '.updated' END AS type
            FROM updated_new n JOIN updated_old o ON o.id = n.id AND o.org_id = n.org_id
           CROSS JOIN LATERAL (SELECT to_jsonb(n) - hidden AS after, to_jsonb(o) - hidden AS old) p
           CROSS JOIN LATERAL (SELECT jsonb_object_agg(e.key, e.value) AS before FROM jsonb_each(p.old) e
                                WHERE e.value IS DISTINCT FROM p.after -> e.key) c
           WHERE c.before IS NOT NULL) c;
    RETURN NULL;
  END IF;
  -- On a shard, one statement per row with plain values (a router statement on the co-located shard).
  FOR changed IN
    SELECT n.org_id, p.after, c.before, p.after ->> uid_column AS object_uid,
           CASE WHEN own_status IS NOT NULL AND p.after ->> 'status' = own_status AND c.before ? 'status'
                THEN object_type || '.' || own_status ELSE object_type || '.updated' END AS type
      FROM updated_new n JOIN updated_old o ON o.id = n.id AND o.org_id = n.org_id
     CROSS JOIN LATERAL (SELECT to_jsonb(n) - hidden AS after, to_jsonb(o) - hidden AS old) p
     CROSS JOIN LATERAL (SELECT jsonb_object_agg(e.key, e.value) AS before FROM jsonb_each(p.old) e
                          WHERE e.value IS DISTINCT FROM p.after -> e.key) c
     WHERE c.before IS NOT NULL
  LOOP
    INSERT INTO event_outbox (org_id, type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id)
    VALUES (changed.org_id, changed.type, changed.object_uid, changed.after, changed.before,
            coalesce(objects -> changed.object_uid, context) ->> 'request_id',
            coalesce(objects -> changed.object_uid, context) ->> 'idempotency_key', context ->> 'import_id');
  END LOOP;
  RETURN NULL;
END
$$;

-- CREATE OR REPLACE kept no SET clause of 017's: the functions again find their tables in this schema and render in UTC.
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION events_record_inserted() SET search_path = %I', current_schema());
  EXECUTE format('ALTER FUNCTION events_record_updated() SET search_path = %I', current_schema());
  EXECUTE 'ALTER FUNCTION events_record_inserted() SET timezone = ''UTC''';
  EXECUTE 'ALTER FUNCTION events_record_updated() SET timezone = ''UTC''';
END
$$;
