-- webhook_deliveries_due_idx and (020) webhook_deliveries_endpoint_idx serve no statement: the claims, the
-- cancellations and the discovery of organizations with due work read webhook_deliveries_endpoint_due_idx
-- (pending rows by endpoint), the backlog metric scans it whole. Every change of a delivery (inserted,
-- claimed, recorded; none can be HOT: the pending indexes' predicates name `state` and `claimed_until`)
-- wrote each of them again. One statement per migration: Citus refuses several in one command on a
-- distributed table (and a DROP of more than one distributed index).
DROP INDEX webhook_deliveries_due_idx
