-- A key may have the `webhooks` scope (SPEC §3c): it manages webhook endpoints and resends events.
ALTER TABLE api_keys
  DROP CONSTRAINT api_keys_scope_check,
  ADD CONSTRAINT api_keys_scope_check CHECK (scope IN ('read', 'write', 'webhooks'));
