export { importJsonl, type ImportOptions, type ImportProgress, type ImportSummary } from './import-jsonl.js';
export { ImportError, type LineError } from './import-error.js';
export { newImportId } from './import-id.js';
