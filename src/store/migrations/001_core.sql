-- Core schema: organizations, API keys, payment methods, credit limits and
-- the ledger behind a limit's outstanding amount. The same SQL runs on
-- PostgreSQL and PGlite.
--
-- Every list query is scoped to one organization, so every index leads with
-- org_id, and every ordering ends with the row id as its unique tie-breaker.
-- Text that the API filters or orders by uses the "C" collation: byte order,
-- identical on every server whatever its locale, and cheaper to compare.

CREATE TABLE organizations (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uid text NOT NULL UNIQUE CHECK (uid ~ '^[A-Za-z0-9_.-]{1,64}$'),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- The key itself is never stored: only the hex SHA-256 of it. The id is
-- public (it is part of the key and shown by `key list`).
CREATE TABLE api_keys (
  id text PRIMARY KEY CHECK (id ~ '^key_[0-9a-f]{16}$'),
  org_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  secret_hash text NOT NULL CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_keys_org_idx ON api_keys (org_id, created_at);

-- Only the last two digits of an account number are kept.
CREATE TABLE payment_methods (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  org_id bigint NOT NULL REFERENCES organizations (id),
  uid text COLLATE "C" NOT NULL CHECK (length(uid) BETWEEN 1 AND 255),
  entity text COLLATE "C" NOT NULL CHECK (length(entity) BETWEEN 1 AND 255),
  type text COLLATE "C" NOT NULL CHECK (type IN ('ACH', 'SEPA', 'BACS', 'WIRE', 'CARD')),
  currency text COLLATE "C" NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  last_2 text NOT NULL CHECK (last_2 ~ '^[0-9]{2}$'),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CONSTRAINT payment_methods_org_uid_key UNIQUE (org_id, uid)
);
CREATE INDEX payment_methods_created_idx ON payment_methods (org_id, created_at, id);
CREATE INDEX payment_methods_updated_idx ON payment_methods (org_id, updated_at, id);
CREATE INDEX payment_methods_currency_created_idx ON payment_methods (org_id, currency, created_at, id);
CREATE INDEX payment_methods_currency_idx ON payment_methods (org_id, currency, id);
CREATE INDEX payment_methods_type_idx ON payment_methods (org_id, type, id);
CREATE INDEX payment_methods_entity_idx ON payment_methods (org_id, entity, id);
CREATE INDEX payment_methods_entity_currency_idx ON payment_methods (org_id, entity, currency, created_at, id);

-- Amounts are exact decimals. Fifteen significant digits at most, so every
-- value is written as a JSON number that an IEEE double reads back exactly.
-- outstanding changes only through ledger_entries; the CHECK makes an
-- overdrawn limit impossible whatever the caller does.
CREATE TABLE credit_limits (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  org_id bigint NOT NULL REFERENCES organizations (id),
  uid text COLLATE "C" NOT NULL CHECK (length(uid) BETWEEN 1 AND 255),
  entity text COLLATE "C" NOT NULL CHECK (length(entity) BETWEEN 1 AND 255),
  currency text COLLATE "C" NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  capacity numeric(15, 2) NOT NULL CHECK (capacity >= 0),
  outstanding numeric(15, 2) NOT NULL DEFAULT 0,
  balance numeric(15, 2) GENERATED ALWAYS AS (capacity - outstanding) STORED,
  rate numeric(10, 8) NOT NULL CHECK (rate >= 0),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CONSTRAINT credit_limits_org_uid_key UNIQUE (org_id, uid),
  CONSTRAINT credit_limits_outstanding_within_capacity CHECK (outstanding >= 0 AND outstanding <= capacity)
);
CREATE INDEX credit_limits_created_idx ON credit_limits (org_id, created_at, id);
CREATE INDEX credit_limits_updated_idx ON credit_limits (org_id, updated_at, id);
CREATE INDEX credit_limits_capacity_idx ON credit_limits (org_id, capacity, id);
CREATE INDEX credit_limits_outstanding_idx ON credit_limits (org_id, outstanding, id);
CREATE INDEX credit_limits_balance_idx ON credit_limits (org_id, balance, id);
CREATE INDEX credit_limits_entity_idx ON credit_limits (org_id, entity, id);

-- Drawdowns and repayments. Idempotent by (org_id, id).
CREATE TABLE ledger_entries (
  org_id bigint NOT NULL REFERENCES organizations (id),
  id text NOT NULL CHECK (length(id) BETWEEN 1 AND 255),
  limit_id bigint NOT NULL REFERENCES credit_limits (id),
  kind text NOT NULL CHECK (kind IN ('drawdown', 'repayment')),
  amount numeric(15, 2) NOT NULL CHECK (amount > 0),
  at timestamptz NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, id)
);
CREATE INDEX ledger_entries_limit_idx ON ledger_entries (limit_id, at);
