-- Secrets of this installation, shared by every process and node that serves
-- it: one row per purpose. `cursor` signs the cursors of keyset pages
-- (src/listing/cursor-secret.ts), so a cursor issued by one node is accepted
-- by every other, and survives restarts. The first process that needs a
-- secret inserts a random one (ON CONFLICT DO NOTHING, so concurrent starts
-- agree on the first); replacing the row invalidates every cursor issued
-- before (clients then start their walk again).
CREATE TABLE installation_secrets (
  name text PRIMARY KEY,
  secret text NOT NULL CHECK (length(secret) >= 32),
  created_at timestamptz NOT NULL DEFAULT now()
);
