export { LendingClient, type LendingClientOptions } from './lending-client.js';
export { LendingApiError, type ErrorCode } from './lending-api-error.js';
export { ListClient, ResourceClient, type Connection, type ListAllParams, type Page } from './resource-client.js';
export { CreditLimitsClient } from './credit-limits-client.js';
export { LoansClient } from './loans-client.js';
export type { HttpMethod, RetryOptions } from './retry-policy.js';
export type { ClientOptions, FetchFunction, RequestOptions, RetryEvent, WriteOptions } from './transport.js';
export * from './generated.js';
export * from './generated-collections.js';
