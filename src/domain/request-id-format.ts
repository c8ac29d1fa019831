// A client's id is echoed only when it is short and plain, so it cannot
// inject anything into headers or logs (src/http/request-id.ts); the OpenAPI
// document states the same bounds of X-Request-Id.

/** The longest request id echoed (a UUID, the service's own, is 36 characters). */
export const MAX_REQUEST_ID_LENGTH = 128;
export const SANE_REQUEST_ID = new RegExp(`^[A-Za-z0-9._:-]{1,${MAX_REQUEST_ID_LENGTH}}$`);
