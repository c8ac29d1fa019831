-- Entities: the borrowers that payment methods and credit limits belong to
-- (their entity column holds an entity's uid).
CREATE TABLE entities (
  id bigint GENERATED ALWAYS AS IDENTITY,
  org_id bigint NOT NULL REFERENCES organizations (id),
  uid text COLLATE "C" NOT NULL CHECK (length(uid) BETWEEN 1 AND 255),
  name text COLLATE "C" NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  country text COLLATE "C" NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  -- org_id in every key: sharding-ready (docs/scaling.md); id first, so a lookup by id uses it.
  PRIMARY KEY (id, org_id),
  CONSTRAINT entities_org_uid_key UNIQUE (org_id, uid)
);
CREATE INDEX entities_created_idx ON entities (org_id, created_at, id);
CREATE INDEX entities_updated_idx ON entities (org_id, updated_at, id);
CREATE INDEX entities_name_idx ON entities (org_id, name, id);
CREATE INDEX entities_country_idx ON entities (org_id, country, id);
CREATE INDEX entities_country_created_idx ON entities (org_id, country, created_at, id);

SELECT row_counts_track('entities');
