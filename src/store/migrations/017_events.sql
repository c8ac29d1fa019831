-- Events and webhooks (SPEC §3c, docs/webhooks.md).
--
-- 1. Every change of a tracked table leaves its event in event_outbox, in
--    the transaction of the change, from whatever path made it (an HTTP
--    write, a loan, the CLI, the import): statement-level triggers installed
--    by events_track(). A rolled-back change leaves nothing; a statement
--    that changes nothing (a replay, a refusal, a re-import of the same
--    values) leaves nothing. The request that caused it is read from the
--    transaction's `lending.event_context` setting (SET LOCAL by the ledger
--    and the import; JSON: request_id, idempotency_key, import_id).
-- 2. A publisher (src/events/event-publisher.ts, any node) moves committed
--    outbox rows into `events`, the log the API lists, stamping created_at
--    from a per-organization clock that only moves forward
--    (event_streams.published_through; publications of one organization
--    are serialized by its row). An outbox row becomes visible only when
--    its transaction commits, and whenever that is, it enters the log
--    after everything already there: a client walking the log oldest first
--    with a cursor never misses an event, even one whose transaction began
--    before and committed after the last one it read.
-- 3. In the same publishing transaction, each new event gets one
--    webhook_deliveries row per enabled endpoint that wants it; nodes claim
--    due deliveries (claimed_until) and record every attempt.
--
-- Every table holds org_id in every key: distributed by it on Citus, and
-- every statement of the service on them is constrained by one org_id. No
-- per-row foreign key to organizations (as 004_bulk_write_path.sql: an
-- import writes an event per record): an organization that has events or
-- endpoints cannot be deleted (organizations_refuse_delete_with_records, below).

CREATE TABLE event_outbox (
  id bigint GENERATED ALWAYS AS IDENTITY,
  org_id bigint NOT NULL,
  uid text COLLATE "C" NOT NULL DEFAULT ('evt_' || replace(gen_random_uuid()::text, '-', '')),
  type text COLLATE "C" NOT NULL,
  object_uid text COLLATE "C" NOT NULL,
  data_object jsonb NOT NULL,
  previous_attributes jsonb,
  request_id text,
  idempotency_key text,
  import_id text,
  PRIMARY KEY (id, org_id)
);
CREATE INDEX event_outbox_org_idx ON event_outbox (org_id, id);

CREATE TABLE events (
  id bigint GENERATED ALWAYS AS IDENTITY,
  org_id bigint NOT NULL,
  uid text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,
  object_uid text COLLATE "C" NOT NULL,
  -- The record's public columns right after the change (column name → value, as to_jsonb renders them);
  -- the API renders it as GET renders the record (src/events/event-rendering.ts).
  data_object jsonb NOT NULL,
  -- On *.updated (and loan.repaid): the public columns that changed, with their earlier values.
  previous_attributes jsonb,
  request_id text,
  idempotency_key text,
  import_id text,
  -- When the event entered the log: strictly increasing per organization.
  created_at timestamptz NOT NULL,
  PRIMARY KEY (id, org_id),
  CONSTRAINT events_org_uid_key UNIQUE (org_id, uid),
  CONSTRAINT events_org_created_key UNIQUE (org_id, created_at)
);
CREATE INDEX events_created_idx ON events (org_id, created_at, id);
CREATE INDEX events_type_idx ON events (org_id, type, created_at, id);
CREATE INDEX events_object_idx ON events (org_id, object_uid, created_at, id);

CREATE TABLE event_streams (
  org_id bigint NOT NULL,
  published_through timestamptz NOT NULL,
  PRIMARY KEY (org_id)
);

CREATE TABLE webhook_endpoints (
  id bigint GENERATED ALWAYS AS IDENTITY,
  org_id bigint NOT NULL,
  uid text COLLATE "C" NOT NULL CHECK (length(uid) BETWEEN 1 AND 255),
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  description text CHECK (length(description) <= 500),
  enabled_events text[] NOT NULL,
  disabled boolean NOT NULL DEFAULT false,
  -- Why it is disabled: 'failing' (every attempt failed for 3 days) or 'requested' (by the API).
  disabled_reason text CHECK (disabled_reason IN ('failing', 'requested')),
  -- AES-256-GCM under WEBHOOK_SECRET_KEY (nonce ‖ ciphertext ‖ tag); never the secret itself.
  secret_ciphertext bytea NOT NULL,
  previous_secret_ciphertext bytea,
  previous_secret_expires_at timestamptz,
  -- The first failed attempt since the last success; NULL while it succeeds.
  failing_since timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (id, org_id),
  CONSTRAINT webhook_endpoints_org_uid_key UNIQUE (org_id, uid)
);
CREATE INDEX webhook_endpoints_created_idx ON webhook_endpoints (org_id, created_at, id);

CREATE TABLE webhook_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY,
  org_id bigint NOT NULL,
  endpoint_id bigint NOT NULL,
  event_id bigint NOT NULL,
  state text COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  -- A node's claim on the next attempt; once past, the attempt is free again (the node died).
  claimed_until timestamptz,
  claimed_by text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (id, org_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (org_id, next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (org_id, endpoint_id, id);
-- The claim: an endpoint's earliest due deliveries, and its attempts in flight (few: released when recorded).
CREATE INDEX webhook_deliveries_endpoint_due_idx ON webhook_deliveries (org_id, endpoint_id, next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_in_flight_idx ON webhook_deliveries (org_id, endpoint_id) WHERE state = 'pending' AND claimed_until IS NOT NULL;
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (org_id, event_id);

CREATE TABLE webhook_attempts (
  id bigint GENERATED ALWAYS AS IDENTITY,
  org_id bigint NOT NULL,
  uid text COLLATE "C" NOT NULL DEFAULT ('wha_' || replace(gen_random_uuid()::text, '-', '')),
  endpoint_id bigint NOT NULL,
  delivery_id bigint NOT NULL,
  event_uid text COLLATE "C" NOT NULL,
  attempt integer NOT NULL,
  status_code integer,
  duration_ms integer NOT NULL,
  error text,
  -- The receiver's answer, its first 1 KiB.
  response_body text,
  -- When the next attempt is due; NULL when none follows (delivered, or given up).
  next_attempt_at timestamptz,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (id, org_id),
  CONSTRAINT webhook_attempts_org_uid_key UNIQUE (org_id, uid)
);
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (org_id, endpoint_id, created_at, id);

-- The columns of a table that are not public (those a resource definition does not render): a row's public
-- columns are to_jsonb(row) - events_hidden_columns(…), one operator instead of a walk over its members.
CREATE FUNCTION events_hidden_columns(tracked oid, public_columns text[]) RETURNS text[]
LANGUAGE sql STABLE AS $$
  SELECT coalesce(array_agg(a.attname::text), '{}') FROM pg_attribute a
   WHERE a.attrelid = tracked AND a.attnum > 0 AND NOT a.attisdropped AND NOT (a.attname::text = ANY (public_columns))
$$;

-- Whether an endpoint's enabled_events (types, `prefix.*`, or `*`) take an event type.
CREATE FUNCTION events_type_matches(event_type text, patterns text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT '*' = ANY (patterns) OR event_type = ANY (patterns) OR split_part(event_type, '.', 1) || '.*' = ANY (patterns)
$$;

-- Whether the triggers run on a shard of a distributed table (Citus): see 015_triggers_on_shards.sql.
CREATE FUNCTION events_on_shards() RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT to_regclass('pg_catalog.pg_dist_shard') IS NOT NULL
$$;

CREATE FUNCTION events_context() RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('lending.event_context', true), '')::jsonb, '{}'::jsonb)
$$;

-- Trigger arguments (events_track): TG_ARGV[0] the object type (credit_limit), [1] the uid column,
-- [2] the public columns as an array literal, [3] optional: a `status` value with an event type of its own
-- (loan → 'repaid': the update that makes a loan repaid is loan.repaid, not loan.updated).
CREATE FUNCTION events_record_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  object_type text := TG_ARGV[0];
  uid_column text := TG_ARGV[1];
  hidden text[] := events_hidden_columns(TG_RELID, TG_ARGV[2]::text[]);
  context jsonb := events_context();
  changed record;
BEGIN
  IF NOT events_on_shards() THEN
    INSERT INTO event_outbox (org_id, type, object_uid, data_object, request_id, idempotency_key, import_id)
    SELECT r.org_id, object_type || '.created', to_jsonb(r) ->> uid_column, to_jsonb(r) - hidden,
           context ->> 'request_id', context ->> 'idempotency_key', context ->> 'import_id'
      FROM inserted_rows r;
    RETURN NULL;
  END IF;
  -- On a shard, one statement per row with plain values (a router statement on the co-located shard).
  FOR changed IN SELECT r.org_id, to_jsonb(r) AS row_value FROM inserted_rows r LOOP
    INSERT INTO event_outbox (org_id, type, object_uid, data_object, request_id, idempotency_key, import_id)
    VALUES (changed.org_id, object_type || '.created', changed.row_value ->> uid_column, changed.row_value - hidden,
            context ->> 'request_id', context ->> 'idempotency_key', context ->> 'import_id');
  END LOOP;
  RETURN NULL;
END
$$;

CREATE FUNCTION events_record_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  object_type text := TG_ARGV[0];
  uid_column text := TG_ARGV[1];
  hidden text[] := events_hidden_columns(TG_RELID, TG_ARGV[2]::text[]);
  own_status text := CASE WHEN TG_NARGS > 3 THEN TG_ARGV[3] END;
  context jsonb := events_context();
  changed record;
BEGIN
  IF NOT events_on_shards() THEN
    INSERT INTO event_outbox (org_id, type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id)
    SELECT c.org_id, c.type, c.after ->> uid_column, c.after, c.before,
           context ->> 'request_id', context ->> 'idempotency_key', context ->> 'import_id'
      FROM (SELECT n.org_id, p.after, c.before,
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
    SELECT n.org_id, p.after, c.before,
           CASE WHEN own_status IS NOT NULL AND p.after ->> 'status' = own_status AND c.before ? 'status'
                THEN object_type || '.' || own_status ELSE object_type || '.updated' END AS type
      FROM updated_new n JOIN updated_old o ON o.id = n.id AND o.org_id = n.org_id
     CROSS JOIN LATERAL (SELECT to_jsonb(n) - hidden AS after, to_jsonb(o) - hidden AS old) p
     CROSS JOIN LATERAL (SELECT jsonb_object_agg(e.key, e.value) AS before FROM jsonb_each(p.old) e
                          WHERE e.value IS DISTINCT FROM p.after -> e.key) c
     WHERE c.before IS NOT NULL
  LOOP
    INSERT INTO event_outbox (org_id, type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id)
    VALUES (changed.org_id, changed.type, changed.after ->> uid_column, changed.after, changed.before,
            context ->> 'request_id', context ->> 'idempotency_key', context ->> 'import_id');
  END LOOP;
  RETURN NULL;
END
$$;

-- Installs the event triggers on a table: one call per collection (docs/architecture.md "Adding a collection").
-- The public columns must be the columns of the resource definition's fields; the start-up schema check compares them.
CREATE FUNCTION events_track(tracked regclass, object_type text, uid_column text, public_columns text[], own_status text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  table_name text := (SELECT relname FROM pg_class WHERE oid = tracked);
  missing text := (SELECT string_agg(col, ', ') FROM unnest(public_columns || uid_column) AS col
                    WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a
                                       WHERE a.attrelid = tracked AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped));
  arguments text := format('%L, %L, %L', object_type, uid_column, public_columns::text)
                    || CASE WHEN own_status IS NULL THEN '' ELSE format(', %L', own_status) END;
BEGIN
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'events_track(%): no column % in the table', table_name, missing;
  END IF;
  EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS inserted_rows
                  FOR EACH STATEMENT EXECUTE FUNCTION events_record_inserted(%s)', table_name || '_events_inserted', tracked, arguments);
  EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS updated_old NEW TABLE AS updated_new
                  FOR EACH STATEMENT EXECUTE FUNCTION events_record_updated(%s)', table_name || '_events_updated', tracked, arguments);
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
    IF EXISTS (SELECT 1 FROM events e WHERE e.org_id = deleted.id)
       OR EXISTS (SELECT 1 FROM event_outbox o WHERE o.org_id = deleted.id)
       OR EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.org_id = deleted.id) THEN
      RAISE EXCEPTION 'an organization that has events or webhook endpoints cannot be deleted'
        USING ERRCODE = 'foreign_key_violation';
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;

-- Timestamps in data_object as to_jsonb renders them in UTC; the trigger functions find their tables in this schema
-- wherever they run (a worker's shard included, as in 015_triggers_on_shards.sql).
DO $$
DECLARE
  fn regprocedure;
BEGIN
  FOR fn IN
    SELECT p.oid::regprocedure FROM pg_proc p
     WHERE p.pronamespace = current_schema()::regnamespace
       AND p.proname IN ('events_record_inserted', 'events_record_updated', 'events_context', 'events_on_shards',
                         'organizations_refuse_delete_with_records')
  LOOP
    EXECUTE format('ALTER FUNCTION %s SET search_path = %I', fn, current_schema());
  END LOOP;
  EXECUTE 'ALTER FUNCTION events_record_inserted() SET timezone = ''UTC''';
  EXECUTE 'ALTER FUNCTION events_record_updated() SET timezone = ''UTC''';
END
$$;

SELECT events_track('payment_methods', 'payment_method', 'uid', '{uid,entity,type,currency,last_2,created_at,updated_at}');
SELECT events_track('entities', 'entity', 'uid', '{uid,name,country,created_at,updated_at}');
SELECT events_track('credit_limits', 'credit_limit', 'uid', '{uid,entity,currency,capacity,outstanding,balance,rate,created_at,updated_at}');
SELECT events_track('loans', 'loan', 'uid',
                    '{uid,entity,credit_limit,payment_method,currency,principal,outstanding,status,reference,created_at,updated_at}', 'repaid');
SELECT events_track('ledger_entries', 'ledger_entry', 'id', '{id,kind,amount,at,reference,loan,key_id,recorded_at}');
