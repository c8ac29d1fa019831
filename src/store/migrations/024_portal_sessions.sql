-- Portal sessions (SPEC §9, docs/portal.md "Access: sessions and links"): one row per one-time link made by
-- `POST /api/portal_sessions/` (or `lending-api portal`), and the session it was exchanged for. Only SHA-256
-- hashes (hex) of the link's token and of the session's bearer secret are kept, never the secrets. The row
-- refers to the key that made it: a session has that key's organization and scope as they are at each
-- request, so revoking the key ends its links and sessions. Kept whole on every node on Citus (a reference
-- table, like api_keys: looked up by a hash at authentication, never by organization; docs/scaling.md
-- "Sharding"). Expired rows are deleted when the organization makes its next link (src/portal/portal-sessions.ts).
CREATE TABLE portal_sessions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  org_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  key_id text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  token_hash text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- The link may be exchanged until then, once.
  link_expires_at timestamptz NOT NULL,
  used_at timestamptz,
  session_hash text UNIQUE CHECK (session_hash ~ '^[0-9a-f]{64}$'),
  session_expires_at timestamptz,
  CHECK ((used_at IS NULL) = (session_hash IS NULL) AND (session_hash IS NULL) = (session_expires_at IS NULL))
);
CREATE INDEX portal_sessions_org_idx ON portal_sessions (org_id, link_expires_at);
