/** A JSON value as a record's field may hold it (an event's `data.object` is a whole record). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A record as the API answers it: field name → value, in definition order. */
export type ApiRecord = Record<string, JsonValue>;
