import { ApiError, type ParamError } from '../domain/errors.js';
import { truncate } from '../domain/truncate.js';
import { eventTypeValue } from '../events/events-resource.js';
import { PAGE_SIZE } from '../listing/query-parser.js';
import { ATTEMPT_STATUSES, type AttemptStatus, type DeliveryAttemptFilters } from '../webhooks/delivery-attempts.js';
import { parseNumberedPage, type NumberedPage } from './numbered-page.js';

const FILTERS = ['status', 'type'] as const;

/**
 * The query of an endpoint's delivery attempts: `page`, and the filters
 * `status` (succeeded, failed) and `type` (an event type or `object.*`, as
 * the events log reads it). A bad value, an unknown parameter, or one given
 * twice is a 422 naming it, all of them at once.
 */
export function parseDeliveryAttemptQuery(rawQuery: string, path: string): { page: NumberedPage; filters: DeliveryAttemptFilters } {
  const params = [...new URLSearchParams(rawQuery)];
  const errors: ParamError[] = [];
  const seen = new Set<string>();
  let status: AttemptStatus | undefined;
  let types: readonly string[] | undefined;
  for (const [param, raw] of params) {
    if (!(FILTERS as readonly string[]).includes(param)) continue;
    if (seen.has(param)) {
      if (!errors.some((error) => error.param === param)) errors.push({ param, detail: `${param} was given more than once; give each parameter at most once` });
      continue;
    }
    seen.add(param);
    if (param === 'status') {
      const value = ATTEMPT_STATUSES.find((name) => name === raw);
      if (value) status = value;
      else errors.push({ param, detail: `status must be one of ${ATTEMPT_STATUSES.join(', ')}, got '${truncate(raw)}'` });
    } else {
      const parsed = eventTypeValue.parse(raw);
      if (parsed.ok) types = String(parsed.value).slice(1, -1).split(',');
      else errors.push({ param, detail: `type ${parsed.reason}, got '${truncate(raw)}'` });
    }
  }
  let page: NumberedPage | undefined;
  try {
    page = parseNumberedPage(new URLSearchParams(params.filter(([param]) => !seen.has(param))).toString(), path);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    errors.push(...pageErrorsOf(error, path));
  }
  if (errors.length > 0 || !page) throw ApiError.invalidParameters(errors);
  return { page: { ...page, params }, filters: { status, types } };
}

/** The page's own refusals, said with every parameter this list takes. */
function pageErrorsOf(error: ApiError, path: string): ParamError[] {
  const listed = error.errors ?? [{ param: 'page', detail: error.message }];
  return listed.map((item) => (item.param === 'page' ? item : { param: item.param, detail: `${truncate(item.param)} is not a parameter of ${path}; it takes page (${PAGE_SIZE} items a page), status and type` }));
}
