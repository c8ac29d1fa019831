export { LendingClient, type LendingClientOptions } from './lending-client.js';
export { LendingApiError, type ErrorCode } from './lending-api-error.js';
export { ListClient, ResourceClient, type Connection, type ListAllParams, type Page } from './resource-client.js';
export type { RetryOptions } from './retry-policy.js';
export type { ClientOptions, FetchFunction, RequestOptions, RetryEvent } from './transport.js';
export * from './generated.js';
