-- Endpoint health (SPEC §3c, docs/webhooks.md "Health"): each endpoint's attempts counted in 5-minute
-- buckets, so `succeeded_24h` / `failed_24h` read at most 289 small rows per endpoint, however many
-- thousands of attempts a busy endpoint has a day, and `last_attempt_at` / `last_success_at` one index
-- probe each. Written by the recording of attempts (src/webhooks/delivery-record.ts: one upsert per
-- organization at the end of the recording transaction, its rows in key order, so two recordings that
-- touch the same endpoints lock their buckets in the same order), read by src/webhooks/endpoint-health.ts.
-- org_id first in the key: distributed by it on Citus with the other webhook tables. One statement (Citus).
CREATE TABLE webhook_endpoint_stats (
  org_id bigint NOT NULL,
  endpoint_id bigint NOT NULL,
  -- The start of the 5-minute bucket (UTC) the attempts were recorded in.
  bucket timestamptz NOT NULL,
  succeeded integer NOT NULL,
  failed integer NOT NULL,
  last_attempt_at timestamptz NOT NULL,
  -- The latest successful attempt of the bucket; NULL when all of its attempts failed.
  last_success_at timestamptz,
  PRIMARY KEY (org_id, endpoint_id, bucket)
)
