-- Ledger writes over HTTP (SPEC §3a, docs/api.md "Writes").

-- A key is read-only unless it was created with the write scope.
ALTER TABLE api_keys
  ADD COLUMN scope text NOT NULL DEFAULT 'read' CONSTRAINT api_keys_scope_check CHECK (scope IN ('read', 'write'));

-- Every entry records the key that wrote it (NULL: written by the CLI or the
-- import, which hold no key) and the caller's optional reference. Entries are
-- never edited or deleted. No foreign key to api_keys: keys are revoked,
-- never deleted, and the ledger must outlive any cleanup of them.
ALTER TABLE ledger_entries
  ADD COLUMN key_id text CONSTRAINT ledger_entries_key_id_check CHECK (key_id ~ '^key_[0-9a-f]{16}$'),
  ADD COLUMN reference text CONSTRAINT ledger_entries_reference_check CHECK (length(reference) BETWEEN 1 AND 255);

-- The first response to each Idempotency-Key, per organization. A request
-- inserts its row before it writes, in the same transaction as the entry,
-- so a concurrent request with the same key waits on the row's unique index
-- until the first commits (then replays it) or rolls back (then runs
-- itself): the entry and its stored response are committed together or not
-- at all. response_* are NULL only inside that transaction.
CREATE TABLE idempotency_keys (
  org_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  idempotency_key text COLLATE "C" NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  -- SHA-256 of the method, path and canonical body: the same key with
  -- another request is refused, not replayed.
  request_fingerprint text NOT NULL CHECK (request_fingerprint ~ '^[0-9a-f]{64}$'),
  key_id text NOT NULL,
  response_status smallint CHECK (response_status BETWEEN 200 AND 599),
  response_body text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (org_id, idempotency_key),
  CONSTRAINT idempotency_keys_response_check CHECK ((response_status IS NULL) = (response_body IS NULL))
);
-- Pruning deletes by expiry across organizations.
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);
