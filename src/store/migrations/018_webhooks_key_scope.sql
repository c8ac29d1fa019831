-- A key with the webhooks scope manages the organization's webhook endpoints (SPEC §3c, docs/api.md "Webhook endpoints").
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scope_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scope_check CHECK (scope IN ('read', 'write', 'webhooks'));
