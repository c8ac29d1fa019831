/**
 * The version of the HTTP API (docs/api.md "Versioning"): a date, sent in
 * every answer's `API-Version` header and the document's `info.version`.
 * Additive changes ship within it; a breaking change ships as a new date.
 */
export const API_VERSION = '2026-11-25';

export const API_VERSION_HEADER = 'api-version';
