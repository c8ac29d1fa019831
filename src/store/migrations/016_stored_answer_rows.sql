-- A write that runs alone stores its answer's values, not its rendered text
-- (docs/api.md "Idempotency", docs/performance.md): the statement that
-- stores them runs in the same message as the write and its COMMIT (one
-- round trip to the database), before the service has rendered anything.
-- A replay renders the stored values exactly as the first answer was
-- rendered. Answers stored as text (response_body) stay as they are.
ALTER TABLE idempotency_keys ADD COLUMN response_row jsonb;

ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_response_check;
-- Inside the claiming transaction no answer; after it, exactly one: the text or the values.
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_response_check
  CHECK ((response_status IS NULL) = (response_body IS NULL AND response_row IS NULL) AND (response_body IS NULL OR response_row IS NULL));
