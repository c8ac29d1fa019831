-- See 019: an index no statement reads, written by every change of a delivery. One statement (Citus).
DROP INDEX webhook_deliveries_endpoint_idx
