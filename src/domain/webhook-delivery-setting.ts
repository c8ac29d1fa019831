/**
 * The webhook settings `serve` reads (SPEC §3c, docs/operations.md). A
 * MINIMAL reading for the deliverer: the endpoints work owns
 * WEBHOOK_ALLOW_PRIVATE, WEBHOOK_ALLOWED_HOSTS and WEBHOOK_SECRET_KEY and
 * may replace this with its own.
 */
export interface WebhookDeliverySettings {
  /** WEBHOOK_ALLOW_PRIVATE=1: private addresses and plain http:// (tests, internal networks). */
  readonly allowPrivate: boolean;
  /** WEBHOOK_ALLOWED_HOSTS: hosts that may be private or plain http://. */
  readonly allowHosts: readonly string[];
  /** WEBHOOK_SECRET_KEY, 32 bytes; undefined when unset. */
  readonly secretKey: Buffer | undefined;
  /** EVENT_RETENTION_DAYS: events older than this are pruned. */
  readonly eventRetentionDays: number;
  /** WEBHOOK_CLAIM_MS: how long a node's claim on an attempt holds (another node takes it after). */
  readonly claimMs: number;
}

export const DEFAULT_EVENT_RETENTION_DAYS = 30;
/** The attempt deadline is 10 s; the claim must outlast it, with room to record the outcome. */
export const MIN_WEBHOOK_CLAIM_MS = 11_000;

export type SettingError = { readonly variable: string; readonly error: string };

function secretKey(raw: string | undefined): Buffer | undefined | SettingError {
  if (raw === undefined) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : /^[A-Za-z0-9+/]{43}=$/.test(raw) ? Buffer.from(raw, 'base64') : undefined;
  if (key?.length !== 32) return { variable: 'WEBHOOK_SECRET_KEY', error: 'must be 32 bytes in base64 (44 characters) or hex (64 characters)' };
  return key;
}

function whole(variable: string, raw: string | undefined, fallback: number, min: number, max: number): number | SettingError {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) return { variable, error: `must be a whole number from ${min} to ${max}, got '${raw}'` };
  return Number(raw);
}

export function parseWebhookDelivery(read: (name: string) => string | undefined): WebhookDeliverySettings | SettingError {
  const allow = read('WEBHOOK_ALLOW_PRIVATE') ?? '0';
  if (!['0', '1', 'true', 'false'].includes(allow)) return { variable: 'WEBHOOK_ALLOW_PRIVATE', error: `must be 1 or 0, got '${allow}'` };
  const key = secretKey(read('WEBHOOK_SECRET_KEY'));
  if (key !== undefined && !Buffer.isBuffer(key)) return key;
  const eventRetentionDays = whole('EVENT_RETENTION_DAYS', read('EVENT_RETENTION_DAYS'), DEFAULT_EVENT_RETENTION_DAYS, 1, 3650);
  if (typeof eventRetentionDays !== 'number') return eventRetentionDays;
  const claimMs = whole('WEBHOOK_CLAIM_MS', read('WEBHOOK_CLAIM_MS'), 30_000, MIN_WEBHOOK_CLAIM_MS, 3_600_000);
  if (typeof claimMs !== 'number') return claimMs;
  const hosts = (read('WEBHOOK_ALLOWED_HOSTS') ?? '').split(',').map((host) => host.trim()).filter((host) => host !== '');
  return { allowPrivate: allow === '1' || allow === 'true', allowHosts: hosts, secretKey: key, eventRetentionDays, claimMs };
}
