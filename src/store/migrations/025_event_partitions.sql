-- Retention that scales (docs/storage.md "Retention"): events, webhook_deliveries and webhook_attempts
-- partitioned by day (UTC), so that pruning a day is a DROP of its partitions instead of a DELETE of every
-- row (at 1,000 events a second, 86 million a day, with their deliveries and attempts).
--
-- - events by created_at (the log's own order);
-- - webhook_deliveries by event_created_at, a new column: their event's created_at. A delivery lives and
--   dies with its event (the row pruning deleted them together), and the claim and the recording find the
--   event and the delivery by a key that names the partition (one index probe, not one per day);
-- - webhook_attempts by created_at (the attempt's time: their history is pruned by it, as before).
--
-- Every unique key holds the partition key: the primary keys become (id, org_id, <day column>); the ids are
-- unchanged and still drawn from one identity sequence per table. (org_id, uid) of events and of attempts
-- is no longer a constraint but an index: a uid is a random UUID drawn once per outbox row (events) or
-- attempt, and an outbox row enters the log once (the publication's DELETE … RETURNING), which is what makes
-- events exactly once; no statement relies on a uniqueness violation there. events_org_created_key
-- (org_id, created_at), which orders the log, holds the partition key and stays a constraint.
--
-- A DEFAULT partition takes any row whose day has no partition yet, so a write never fails for lack of one;
-- it stays empty while partitions are made ahead (PostgreSQL scans it whenever a partition is created, and
-- refuses a partition for a day it holds rows of). This migration creates a partition for every day the
-- tables hold rows of, and for today and the next two days (UTC); `serve` creates the next ones ahead and
-- drops expired ones (src/events/event-partitions.ts).
--
-- On a Citus cluster already distributed, run `lending-api distribute` again after this migration: the
-- tables are new, and it distributes them (partitions included) by org_id, co-located as before.

ALTER TABLE events RENAME TO events_before_025;
ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_before_025;
ALTER TABLE webhook_attempts RENAME TO webhook_attempts_before_025;
-- Free the names of their constraints and indexes for the new tables (the old tables are dropped below).
ALTER TABLE events_before_025 DROP CONSTRAINT events_pkey, DROP CONSTRAINT events_org_uid_key, DROP CONSTRAINT events_org_created_key;
DROP INDEX events_created_idx, events_type_idx, events_object_idx;
ALTER TABLE webhook_deliveries_before_025 DROP CONSTRAINT webhook_deliveries_pkey;
DROP INDEX webhook_deliveries_endpoint_due_idx, webhook_deliveries_in_flight_idx, webhook_deliveries_event_idx;
ALTER TABLE webhook_attempts_before_025 DROP CONSTRAINT webhook_attempts_pkey, DROP CONSTRAINT webhook_attempts_org_uid_key;
DROP INDEX webhook_attempts_endpoint_idx;

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
  -- When the event entered the log: strictly increasing per organization. The partition key (by day).
  created_at timestamptz NOT NULL,
  PRIMARY KEY (id, org_id, created_at),
  CONSTRAINT events_org_created_key UNIQUE (org_id, created_at)
) PARTITION BY RANGE (created_at);
CREATE INDEX events_uid_idx ON events (org_id, uid);
CREATE INDEX events_created_idx ON events (org_id, created_at, id);
CREATE INDEX events_type_idx ON events (org_id, type, created_at, id);
CREATE INDEX events_object_idx ON events (org_id, object_uid, created_at, id);

CREATE TABLE webhook_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY,
  org_id bigint NOT NULL,
  endpoint_id bigint NOT NULL,
  event_id bigint NOT NULL,
  -- The event's created_at: the partition key (by day), and with event_id the event's key.
  event_created_at timestamptz NOT NULL,
  state text COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  -- A node's claim on the next attempt; once past, the attempt is free again (the node died).
  claimed_until timestamptz,
  claimed_by text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (id, org_id, event_created_at)
) PARTITION BY RANGE (event_created_at);
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
  -- When the attempt was made: the partition key (by day).
  created_at timestamptz NOT NULL,
  PRIMARY KEY (id, org_id, created_at)
) PARTITION BY RANGE (created_at);
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (org_id, endpoint_id, created_at, id);

-- The default partitions, then one per day of the rows held and for today and the next two days (UTC);
-- named <table>_pYYYYMMDD, as src/events/event-partitions.ts names them.
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE TABLE webhook_deliveries_default PARTITION OF webhook_deliveries DEFAULT;
CREATE TABLE webhook_attempts_default PARTITION OF webhook_attempts DEFAULT;
DO $$
DECLARE
  parent text;
  day date;
  days date[] := ARRAY(
    SELECT (created_at AT TIME ZONE 'UTC')::date FROM events_before_025
    UNION SELECT (created_at AT TIME ZONE 'UTC')::date FROM webhook_deliveries_before_025
    UNION SELECT (created_at AT TIME ZONE 'UTC')::date FROM webhook_attempts_before_025
    UNION SELECT (now() AT TIME ZONE 'UTC')::date + offset_days FROM generate_series(0, 2) AS offset_days);
BEGIN
  FOREACH parent IN ARRAY ARRAY['events', 'webhook_deliveries', 'webhook_attempts'] LOOP
    FOREACH day IN ARRAY days LOOP
      EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                     parent || '_p' || to_char(day, 'YYYYMMDD'), parent,
                     day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
    END LOOP;
  END LOOP;
END
$$;

-- Every row and id kept.
INSERT INTO events (id, org_id, uid, type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id, created_at)
OVERRIDING SYSTEM VALUE
SELECT id, org_id, uid, type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id, created_at
  FROM events_before_025;
-- A delivery whose event is gone (none should be: they were pruned together) keeps its own created_at.
INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_created_at, state, attempts, next_attempt_at, claimed_until, claimed_by, created_at, updated_at)
OVERRIDING SYSTEM VALUE
SELECT d.id, d.org_id, d.endpoint_id, d.event_id, coalesce(e.created_at, d.created_at), d.state, d.attempts, d.next_attempt_at,
       d.claimed_until, d.claimed_by, d.created_at, d.updated_at
  FROM webhook_deliveries_before_025 d LEFT JOIN events_before_025 e ON e.org_id = d.org_id AND e.id = d.event_id;
INSERT INTO webhook_attempts (id, org_id, uid, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, error, response_body, next_attempt_at, created_at)
OVERRIDING SYSTEM VALUE
SELECT id, org_id, uid, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, error, response_body, next_attempt_at, created_at
  FROM webhook_attempts_before_025;

-- The new identity sequences continue where the old ones stopped, then take their names.
DO $$
DECLARE
  parent text;
  old_sequence text;
  new_sequence text;
  last bigint;
  called boolean;
BEGIN
  FOREACH parent IN ARRAY ARRAY['events', 'webhook_deliveries', 'webhook_attempts'] LOOP
    old_sequence := pg_get_serial_sequence(parent || '_before_025', 'id');
    new_sequence := pg_get_serial_sequence(parent, 'id');
    EXECUTE format('SELECT last_value, is_called FROM %s', old_sequence) INTO last, called;
    PERFORM setval(new_sequence, last, called);
    EXECUTE format('DROP TABLE %I', parent || '_before_025');
    EXECUTE format('ALTER SEQUENCE %s RENAME TO %I', new_sequence, parent || '_id_seq');
  END LOOP;
END
$$;
