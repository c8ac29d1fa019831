-- Loans (SPEC §1 Loan, §3b; docs/api.md "Loans"): money lent on a credit
-- limit and paid out to a payment method of the same entity and currency.
-- A loan is created together with the drawdown of its principal, and each of
-- its repayments is a repayment of its limit: outstanding moves with the
-- limit's in the same transaction (src/ledger/loan-operations.ts).
--
-- credit_limit and payment_method hold the uids the API shows (a limit's and
-- a method's uid never change). status is derived from outstanding, so it
-- cannot disagree with it.
CREATE TABLE loans (
  id bigint GENERATED ALWAYS AS IDENTITY,
  org_id bigint NOT NULL REFERENCES organizations (id),
  uid text COLLATE "C" NOT NULL CHECK (length(uid) BETWEEN 1 AND 255),
  entity text COLLATE "C" NOT NULL CHECK (length(entity) BETWEEN 1 AND 255),
  credit_limit text COLLATE "C" NOT NULL CHECK (length(credit_limit) BETWEEN 1 AND 255),
  payment_method text COLLATE "C" NOT NULL CHECK (length(payment_method) BETWEEN 1 AND 255),
  currency text COLLATE "C" NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  principal numeric(15, 2) NOT NULL CHECK (principal > 0),
  outstanding numeric(15, 2) NOT NULL,
  status text COLLATE "C" GENERATED ALWAYS AS (CASE WHEN outstanding > 0 THEN 'active' ELSE 'repaid' END) STORED,
  reference text CHECK (length(reference) BETWEEN 1 AND 255),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  -- org_id in every key: sharding-ready (docs/scaling.md); id first, so a lookup by id uses it.
  PRIMARY KEY (id, org_id),
  CONSTRAINT loans_org_uid_key UNIQUE (org_id, uid),
  CONSTRAINT loans_outstanding_within_principal CHECK (outstanding >= 0 AND outstanding <= principal)
);
CREATE INDEX loans_created_idx ON loans (org_id, created_at, id);
CREATE INDEX loans_updated_idx ON loans (org_id, updated_at, id);
CREATE INDEX loans_principal_idx ON loans (org_id, principal, id);
CREATE INDEX loans_outstanding_idx ON loans (org_id, outstanding, id);
CREATE INDEX loans_entity_idx ON loans (org_id, entity, id);
CREATE INDEX loans_currency_idx ON loans (org_id, currency, id);
CREATE INDEX loans_status_idx ON loans (org_id, status, id);
CREATE INDEX loans_credit_limit_idx ON loans (org_id, credit_limit, id);

-- Repayments change these without moving the table's version (as drawdowns
-- do a credit limit's): the definition's volatileFields name the same.
SELECT row_counts_track('loans', '{outstanding,status,updated_at}');

-- The loan a ledger entry belongs to (its uid; NULL for a direct drawdown or
-- repayment of the limit). Loan writes sum a loan's entries by it.
ALTER TABLE ledger_entries ADD COLUMN loan text COLLATE "C" CONSTRAINT ledger_entries_loan_check CHECK (length(loan) BETWEEN 1 AND 255);
CREATE INDEX ledger_entries_loan_idx ON ledger_entries (org_id, loan) WHERE loan IS NOT NULL;
