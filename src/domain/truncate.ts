/** Shortens a client value for an error message. */
export function truncate(raw: string, max = 40): string {
  return raw.length > max ? `${raw.slice(0, max)}…` : raw;
}
