// What a drawdown or repayment request may carry: enforced by the write
// routes (src/http/) and stated by the OpenAPI document (src/openapi/), which
// both read them from here.

/** The largest write body, in bytes. */
export const MAX_WRITE_BODY_BYTES = 4096;
/** The longest `reference` of a ledger entry, in characters. */
export const MAX_REFERENCE_LENGTH = 255;
/** The longest Idempotency-Key, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
