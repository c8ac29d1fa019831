// pg's own result class, which its package exports as `pg/lib/result` but does not type: the fields src/store/pg-query.ts reads and sets.
declare module 'pg/lib/result.js' {
  interface FieldDescription {
    readonly name: string;
    readonly dataTypeID: number;
    readonly format?: string;
  }

  export default class Result {
    constructor(rowMode: string | undefined, types: unknown);
    fields: FieldDescription[];
    _parsers: unknown[] | undefined;
    _types: unknown;
    _prebuiltEmptyResultObject: unknown;
    addFields(fields: FieldDescription[]): void;
  }
}
