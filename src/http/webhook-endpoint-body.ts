import { ApiError, type ParamError } from '../domain/errors.js';
import { CREDENTIAL_FORMS, holdsCredential, type PresentedCredential } from '../domain/credential-in-text.js';
import { truncate } from '../domain/truncate.js';
import { CONTROL_CHARACTERS, hasLoneSurrogate } from '../domain/well-formed-text.js';
import { checkWebhookUrl, MAX_WEBHOOK_URL_LENGTH, type DestinationPolicy } from '../webhooks/destination.js';
import { EVENT_TYPES, EVENT_TYPE_PREFIXES, EVERY_EVENT, isEventPattern, MAX_ENABLED_EVENTS } from '../events/event-types.js';
import { MAX_DESCRIPTION_LENGTH, type EndpointChanges, type EndpointInput } from '../webhooks/webhook-endpoints.js';
import { parseBodyObject, refuseUnknownMembers, typeName } from './write-body.js';


export const CREATE_MEMBERS = ['url', 'enabled_events', 'description'] as const;
export const UPDATE_MEMBERS = ['url', 'enabled_events', 'description', 'disabled'] as const;

// A developer pointing an endpoint at their own machine is told the two ways that work.
const LOCAL_TESTING =
  '; to test a receiver on your own machine, forward events to it with `lending-api webhooks listen --forward-to http://localhost:PORT/PATH` ' +
  '(no endpoint needed), or run a test service with WEBHOOK_ALLOW_PRIVATE=1, which allows plain http:// and private addresses';

const EXAMPLE = '{"url": "https://example.com/webhooks", "enabled_events": ["loan.*"]}';

/**
 * `POST /api/webhook_endpoints/`: every invalid member in one 422 (malformed JSON: 400 invalid_json). A url or
 * description holding a credential (`presented`: the request's own) is refused.
 */
export function parseEndpointCreation(raw: string | undefined, policy: DestinationPolicy, presented?: PresentedCredential): EndpointInput {
  const body = parseBodyObject(raw, 'url', EXAMPLE);
  const errors = refuseUnknownMembers(body, CREATE_MEMBERS);
  const url = urlOf(body.url, policy, errors, true, presented);
  const enabledEvents = enabledEventsOf(body.enabled_events, errors, true);
  const description = descriptionOf(body.description, errors, presented);
  if (errors.length > 0 || url === undefined || enabledEvents === undefined) throw ApiError.invalidBody(errors);
  return { url, enabledEvents, description: description ?? null };
}

/** `POST /api/webhook_endpoints/{id}/`: the members given, at least one. */
export function parseEndpointUpdate(raw: string | undefined, policy: DestinationPolicy, presented?: PresentedCredential): EndpointChanges {
  const body = parseBodyObject(raw, 'body', '{"disabled": true}');
  const errors = refuseUnknownMembers(body, UPDATE_MEMBERS);
  if (Object.keys(body).length === 0) errors.push({ param: 'body', detail: `give at least one of ${UPDATE_MEMBERS.join(', ')}` });
  const url = urlOf(body.url, policy, errors, false, presented);
  const enabledEvents = enabledEventsOf(body.enabled_events, errors, false);
  const description = descriptionOf(body.description, errors, presented);
  const disabled = body.disabled;
  if (disabled !== undefined && typeof disabled !== 'boolean') errors.push({ param: 'disabled', detail: `disabled must be true or false, got ${typeName(disabled)}` });
  if (errors.length > 0) throw ApiError.invalidBody(errors);
  return {
    ...(url === undefined ? {} : { url }),
    ...(enabledEvents === undefined ? {} : { enabledEvents }),
    ...(description === undefined ? {} : { description }),
    ...(typeof disabled === 'boolean' ? { disabled } : {}),
  };
}

/** `POST …/rotate_secret/` takes no member: an empty body or `{}`. */
export function parseRotation(raw: string | undefined): void {
  if ((raw ?? '').trim() === '') return;
  const errors = refuseUnknownMembers(parseBodyObject(raw, 'body', '{}'), []);
  if (errors.length > 0) throw ApiError.invalidBody(errors);
}

/** The URL as the service will call it (normalized by the URL parser), or an error naming `url` with the reason. */
function urlOf(value: unknown, policy: DestinationPolicy, errors: ParamError[], required: boolean, presented?: PresentedCredential): string | undefined {
  if (value === undefined) {
    if (required) errors.push({ param: 'url', detail: 'url is required: the https:// URL events are sent to' });
    return undefined;
  }
  if (typeof value !== 'string') {
    errors.push({ param: 'url', detail: `url must be a string, got ${typeName(value)}` });
    return undefined;
  }
  // Shown in every answer about the endpoint and called on every delivery: a key in it would be sent to the receiver.
  if (holdsCredential(value, presented)) {
    errors.push({ param: 'url', detail: `url looks like an API key or holds one (${CREDENTIAL_FORMS}); it is shown with the endpoint and called on every delivery, so it must not hold a credential` });
    return undefined;
  }
  const checked = checkWebhookUrl(value, policy);
  if (!checked.ok) {
    errors.push({ param: 'url', detail: `url ${checked.problem}${checked.allowedWithPrivate ? LOCAL_TESTING : ''}` });
    return undefined;
  }
  const url = checked.url.href;
  if (url.length > MAX_WEBHOOK_URL_LENGTH) {
    errors.push({ param: 'url', detail: `url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters once normalized, got ${url.length}` });
    return undefined;
  }
  return url;
}

/** The patterns, each once, in the order given. */
function enabledEventsOf(value: unknown, errors: ParamError[], required: boolean): string[] | undefined {
  const expected = `event types (${EVENT_TYPES[0]}), prefixes (${EVENT_TYPE_PREFIXES[0]}) or ${EVERY_EVENT}`;
  if (value === undefined) {
    if (required) errors.push({ param: 'enabled_events', detail: `enabled_events is required: an array of ${expected}` });
    return undefined;
  }
  if (!Array.isArray(value) || value.length === 0) {
    errors.push({ param: 'enabled_events', detail: `enabled_events must be a non-empty array of ${expected}, got ${Array.isArray(value) ? 'an empty array' : typeName(value)}` });
    return undefined;
  }
  const patterns: string[] = [];
  value.forEach((entry: unknown, index) => {
    const param = `enabled_events[${index}]`;
    if (typeof entry !== 'string') errors.push({ param, detail: `${param} must be a string, got ${typeName(entry)}` });
    else if (!isEventPattern(entry)) {
      errors.push({ param, detail: `${param} is '${truncate(entry)}', not an event type, a prefix or ${EVERY_EVENT}; the types are ${EVENT_TYPES.join(', ')}` });
    } else if (!patterns.includes(entry)) patterns.push(entry);
  });
  if (value.length > MAX_ENABLED_EVENTS) {
    errors.push({ param: 'enabled_events', detail: `enabled_events may hold at most ${MAX_ENABLED_EVENTS} entries, got ${value.length}` });
  }
  return patterns;
}

/** A string of 1–500 characters, or null (no description); undefined when absent or invalid. */
function descriptionOf(value: unknown, errors: ParamError[], presented?: PresentedCredential): string | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'string') {
    errors.push({ param: 'description', detail: `description must be a string or null, got ${typeName(value)}` });
    return undefined;
  }
  const length = [...value].length;
  if (length < 1 || length > MAX_DESCRIPTION_LENGTH) {
    errors.push({ param: 'description', detail: `description must be 1–${MAX_DESCRIPTION_LENGTH} characters (null for none), got ${length}` });
  } else if (value.search(CONTROL_CHARACTERS) !== -1) {
    errors.push({ param: 'description', detail: 'description must not contain control characters' });
  } else if (hasLoneSurrogate(value)) {
    errors.push({ param: 'description', detail: 'description must be well-formed Unicode: it holds half of a surrogate pair on its own' });
  } else if (holdsCredential(value, presented)) {
    errors.push({ param: 'description', detail: `description looks like an API key or holds one (${CREDENTIAL_FORMS}); it is shown in every answer about the endpoint, so it must not hold a credential` });
  } else return value;
  return undefined;
}
