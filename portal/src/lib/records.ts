/** The records the portal shows, as the API renders them (docs/api.md "Records", docs/webhooks.md). */
export interface PaymentMethod {
  uid: string;
  entity: string;
  type: string;
  currency: string;
  last_2: string;
  created_at: string;
  updated_at: string;
}

export interface CreditLimit {
  uid: string;
  entity: string;
  currency: string;
  capacity: number;
  outstanding: number;
  balance: number;
  rate: number;
  created_at: string;
  updated_at: string;
}

export interface Entity {
  uid: string;
  name: string;
  country: string;
  created_at: string;
  updated_at: string;
}

export interface Loan {
  uid: string;
  entity: string;
  credit_limit: string;
  payment_method: string;
  currency: string;
  principal: number;
  outstanding: number;
  status: string;
  reference: string | null;
  created_at: string;
  updated_at: string;
}

export interface LedgerEntry {
  id: string;
  kind: 'drawdown' | 'repayment';
  amount: number;
  at: string;
  reference: string | null;
  loan: string | null;
  created_at: string;
}

export interface LogEvent {
  id: string;
  type: string;
  created_at: string;
  data: { object: { uid?: string; id?: string } & Record<string, unknown> };
}

/** One UTC hour of an endpoint's attempts; `hour` is its start. */
export interface HourOfAttempts {
  hour: string;
  succeeded: number;
  failed: number;
}

export interface EndpointHealth {
  pending: number;
  last_attempt_at: string | null;
  last_success_at: string | null;
  failing_since: string | null;
  succeeded_24h: number;
  failed_24h: number;
  /** 24 UTC hours, oldest first, zero-filled. */
  hourly_24h: HourOfAttempts[];
}

export interface WebhookEndpoint {
  id: string;
  url: string;
  description: string | null;
  enabled_events: string[];
  disabled: boolean;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
  health: EndpointHealth;
  secret?: string;
}

export interface DeliveryAttempt {
  id: string;
  event: string;
  /** null once the event has left the log. */
  event_type: string | null;
  attempt: number;
  status_code: number | null;
  duration_ms: number | null;
  error: string | null;
  response_body: string | null;
  next_attempt_at: string | null;
  created_at: string;
}
