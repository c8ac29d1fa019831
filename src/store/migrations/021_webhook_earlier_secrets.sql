-- Secrets rotated out before the previous one and still honoured (24 hours each from their own rotation): a
-- second rotate_secret within a day kept only the secret it replaced, so receivers that had not switched yet
-- stopped verifying at once. Sealed under WEBHOOK_SECRET_KEY as one JSON list ([{secret, expires_at}], newest
-- first; src/webhooks/endpoint-secrets.ts), NULL when there is none. One statement (Citus).
ALTER TABLE webhook_endpoints ADD COLUMN earlier_secrets bytea
