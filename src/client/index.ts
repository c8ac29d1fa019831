export { LendingClient, type LendingClientOptions } from './lending-client.js';
export { LendingApiError, type ErrorCode } from './lending-api-error.js';
export type { Page, ResourceClient } from './resource-client.js';
export type { RetryOptions } from './retry-policy.js';
export type { FetchFunction } from './transport.js';
export type {
  CreditLimit,
  CreditLimitListParams,
  CreditLimitPage,
  ParamError,
  PaymentMethod,
  PaymentMethodListParams,
  PaymentMethodPage,
  Problem,
} from './generated.js';
