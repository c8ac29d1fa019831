/** How the portal writes amounts and times: the API's values, readable, never rounded away. */
export function money(amount: number | null | undefined, currency?: string): string {
  if (amount === null || amount === undefined) return '—';
  const text = amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  return currency ? `${text} ${currency}` : text;
}

/** A timestamp as UTC, to the second (the exact value stays in the element's datetime). */
export function when(timestamp: string | null | undefined): string {
  if (!timestamp) return '—';
  return timestamp.replace('T', ' ').replace(/\.\d+Z$/, ' UTC').replace(/Z$/, ' UTC');
}

export function percent(part: number, whole: number): string {
  if (whole <= 0) return '—';
  return `${((part / whole) * 100).toFixed(1)} %`;
}

/** A fresh Idempotency-Key (one per form: SPEC §3a). */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}
