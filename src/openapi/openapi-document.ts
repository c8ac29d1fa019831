import { type ErrorCode } from '../domain/errors.js';
import { MAX_RETRY_AFTER_SECONDS } from '../domain/header-values.js';
import { MAX_DOCS_PAGE_LENGTH } from '../domain/answer-bounds.js';
import { MAX_LINK_HEADER_LENGTH } from '../listing/page-links.js';
import { PAGE_SIZE } from '../listing/query-parser.js';
import { collectionPathOf, type ResourceDefinition } from '../listing/resource-definition.js';
import { schemaRef, type JsonObject } from './json-schema.js';
import { capitalize, plural, withArticle } from './plural.js';
import { codesByStatus, problemResponseOfCodes, problemResponses, problemSchemas } from './problem-responses.js';
import { listParameters, pageSchema, pageSchemaName, parentUidParameter, recordSchema, uidParameter } from './resource-schemas.js';
import { writeComponents, writePaths } from './write-operations.js';
import { answerHeaderComponents, corsPreflightResponse, declareAnswerHeaders } from './answer-headers.js';
import { CORS_PREFLIGHT, declareAllowValues, declareMethodsNotAllowed } from './methods-not-allowed.js';
import { ledgerCollectionsOf } from '../resources/index.js';
import { loanWriteOperations, loanWriteSchemas } from './loan-write-operations.js';
import { events } from '../events/events-resource.js';
import { servesEvents } from '../events/event-types.js';
import { eventSchemas, eventWebhooks, resendPath, streamPath } from './event-operations.js';
import { PORTAL_SESSION_SCHEME, PORTAL_TAG, portalSessionPaths, portalSessionScheme, portalSessionSchemas } from './portal-session-operations.js';
import { WEBHOOK_ENDPOINTS_TAG, webhookEndpointPaths, webhookEndpointSchemas } from './webhook-endpoint-operations.js';

/**
 * Problems each operation can answer besides its 200 (the methods a path does not serve answer 405: see
 * declareMethodsNotAllowed). `bad_request`: a URL the router cannot read (malformed percent-encoding, raw
 * non-ASCII in the query).
 */
const LIST_ERRORS = ['bad_request', 'invalid_parameter', 'unauthorized', 'page_out_of_range', 'rate_limited', 'internal_error', 'service_unavailable', 'overloaded'] as const satisfies readonly ErrorCode[];
/** A nested list also answers 404 when its parent record is not the caller's. */
const NESTED_LIST_ERRORS = [...LIST_ERRORS, 'not_found'] as const satisfies readonly ErrorCode[];
/**
 * The probes and the reference take no API key: their budget is per client address
 * (UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE), and past it they answer 429.
 */
/** Any route may answer 503 while the node shuts down (src/http/closing-answers.ts). */
const UNAUTHENTICATED_ERRORS = ['rate_limited', 'service_unavailable'] as const satisfies readonly ErrorCode[];
/** A record's URL takes no query parameters: one given is a 422 naming it. */
const RETRIEVE_ERRORS = ['bad_request', 'invalid_parameter', 'unauthorized', 'not_found', 'rate_limited', 'internal_error', 'service_unavailable', 'overloaded'] as const satisfies readonly ErrorCode[];

export interface OpenApiDocumentOptions {
  readonly resources: readonly ResourceDefinition[];
  readonly version: string;
}

const DESCRIPTION = `The API of a lending platform: list and look up the payment methods, credit limits and loans of the entities you lend to, before you create a loan; record drawdowns and repayments and create and repay loans as they happen (write-scoped keys, \`Idempotency-Key\` required); and follow every change as an event, in the events log and pushed, signed, to your webhook endpoints.

**Authentication.** HTTP Basic: your organization ID is the user name and an API key the password. Every request sees only its own organization's records; another organization's record is a 404.

**Pages.** Lists return ${PAGE_SIZE} items per page with the exact \`count\` and absolute \`next\`/\`previous\` links (also in a \`Link\` header). Page 1 of an empty result is a 200; a page past the last one is a 404 \`page_out_of_range\`. To walk a list that changes while you read it, use keyset pages: \`cursor=\` (empty) starts at the first record and the \`next\`/\`previous\` links carry encrypted cursors (opaque: they reveal no position); a record that does not change during the walk is returned exactly once, and with \`order_by=updated_at\` a changed record is returned again in its latest state.

**Timestamps** are RFC 3339 in UTC with exactly six fractional digits. Filters accept RFC 3339 / ISO 8601 times with up to nine fractional digits (compared exactly at microsecond precision) or a bare date meaning the whole UTC day, and both ends of a range are inclusive.

**Errors** are RFC 9457 \`application/problem+json\` with a stable \`code\`; a 422 lists every invalid parameter in \`errors\`. A method a path does not serve answers 405 with an \`Allow\` header naming those it does (\`GET, HEAD\` on the reads, \`POST\` on the writes).

**CORS.** Only for the origins the operator lists in CORS_ALLOWED_ORIGINS (none by default): a request with one of them as \`Origin\` gets \`Access-Control-Allow-Origin\` and \`Access-Control-Expose-Headers\` on every answer, and its preflight a 204; from any other origin no CORS header is sent. Every response carries \`X-Request-Id\` and \`API-Version\`; every answer to an authenticated request carries \`X-RateLimit-Limit\`, \`-Remaining\` and \`-Reset\`, and so does every answer of the probes and the reference, which have a budget per client address instead (see docs/api.md "Rate limits").

**Versioning.** \`info.version\` is the API version, sent in every answer's \`API-Version\` header. Within a version changes are only additive (new paths, new optional parameters, new response fields, new error codes); a breaking change ships as a new version (docs/api.md "Versioning").`;

/**
 * The OpenAPI 3.1 document of the API, built from the resource definitions
 * the server validates with and from the error table. Nothing here names a
 * resource: a new collection appears by being in `resources`.
 */
export function buildOpenApiDocument(options: OpenApiDocumentOptions): JsonObject {
  const { resources } = options;
  // The events log is listed like a collection, beside the records its events are about.
  const withEvents = servesEvents(resources);
  const listed = withEvents ? [...resources, events] : resources;
  const paths: Record<string, JsonObject> = {};
  for (const resource of listed) {
    paths[`/api/${collectionPathOf(resource)}/`] = { get: listOperation(resource) };
    if (!resource.parent) paths[`/api/${resource.path}/{uid}/`] = { get: retrieveOperation(resource) };
  }
  // The ledger moves credit limits: its writes are documented wherever they are.
  const written = ledgerCollectionsOf(resources);
  const ledger = written ? writeComponents(written.limits) : undefined;
  if (written) Object.assign(paths, writePaths(written.limits));
  // Loans are written through the ledger too: POST beside their GET.
  const loanSchemas = written?.loans ? loanWriteSchemas(written.loans, written.limits) : undefined;
  if (written?.loans) for (const [path, post] of Object.entries(loanWriteOperations(written.loans, written.limits))) paths[path] = { ...paths[path], post };
  if (withEvents) Object.assign(paths, resendPath(events), streamPath(events));
  Object.assign(paths, webhookEndpointPaths(), portalSessionPaths());
  paths['/healthz'] = { get: healthOperation() };
  paths['/readyz'] = { get: readyOperation() };
  paths['/api/openapi.json'] = {
    get: referenceOperation('getOpenApiDocument', 'This OpenAPI document', 'The document of this API (what `openapi.json` in the repository holds). No authentication.', 'application/json', { type: 'object' }),
  };
  paths['/docs'] = {
    get: referenceOperation('getApiReference', 'Interactive API reference (HTML)', 'Swagger UI on this document, served with its assets by this server. No authentication.', 'text/html', { type: 'string', maxLength: MAX_DOCS_PAGE_LENGTH }),
  };
  declareMethodsNotAllowed(paths);
  const responses = { ...problemResponses(), [CORS_PREFLIGHT]: corsPreflightResponse() };
  declareAllowValues(paths, responses);
  declareAnswerHeaders(paths, responses);

  return {
    openapi: '3.1.0',
    info: { title: 'lending-api', version: options.version, description: DESCRIPTION },
    // Relative (OpenAPI 3.1 §4.8.5: to where the document is served): /api/openapi.json describes the
    // installation that serves it, whatever its origin; a copy elsewhere takes a base URL of its own.
    // x-internal: false — the API is for the organizations' own systems, not only the operator's.
    servers: [{ url: '/', description: 'The installation serving this document at `/api/openapi.json`, whichever environment it is (local, staging or production): the URL is relative to where the document was fetched.', 'x-internal': false }],
    tags: [
      ...listed.map((resource) => ({ name: tagOf(resource), description: resource.description })),
      ...(ledger ? [{ name: 'Ledger', description: 'Drawdowns and repayments: write-scoped keys, Idempotency-Key required.' }] : []),
      { name: WEBHOOK_ENDPOINTS_TAG, description: 'Where the organization\'s events are delivered: keys with the `webhooks` scope.' },
      { name: PORTAL_TAG, description: 'One-time links into the organization\'s portal, and their exchange for a session the portal sends as a bearer credential.' },
      { name: 'Health', description: 'Probes for orchestrators; no authentication.' },
      { name: 'Reference', description: 'This document and its interactive rendering; no authentication.' },
    ],
    security: [{ basicAuth: [] }, { [PORTAL_SESSION_SCHEME]: [] }],
    paths,
    ...(withEvents ? { webhooks: eventWebhooks() } : {}),
    components: {
      securitySchemes: {
        basicAuth: {
          type: 'http',
          scheme: 'basic',
          description: 'User name: your organization ID. Password: an API key (a `write`-scoped key for drawdowns and repayments).',
        },
        [PORTAL_SESSION_SCHEME]: portalSessionScheme(),
      },
      schemas: {
        ...Object.fromEntries(
          resources.flatMap((resource) => [
            [resource.schemaName, recordSchema(resource)],
            [pageSchemaName(resource), pageSchema(resource)],
          ]),
        ),
        ...(withEvents ? eventSchemas(events) : {}),
        ...problemSchemas(),
        ...ledger?.schemas,
        ...loanSchemas,
        ...webhookEndpointSchemas(),
        ...portalSessionSchemas(),
        Health: {
          title: 'Health',
          type: 'object',
          required: ['status'],
          properties: { status: { const: 'ok' } },
          additionalProperties: false,
        },
        Readiness: {
          title: 'Readiness',
          type: 'object',
          required: ['status', 'database'],
          properties: {
            status: { const: 'ready' },
            database: { const: 'reachable' },
            role: { enum: ['primary', 'replica'], description: 'Whether this node reads the primary or a hot standby.' },
            serves_limits: { type: 'boolean', description: 'Whether this node answers credit limits (always on a primary; on a standby only while it is the synchronous standby: declared with REPLICA_LIMITS=sync, or named by Patroni with PATRONI_URL).' },
            lag_bytes: { type: ['number', 'null'], description: 'On a standby: WAL received but not yet applied, in bytes.' },
            lag_seconds: { type: ['number', 'null'], description: 'On a standby: how far behind the applied data is, in seconds (0 when caught up).' },
            wal_receiver: {
              // pg_stat_wal_receiver.status: the states PostgreSQL names (WalRcvGetStateString).
              enum: ['stopped', 'starting', 'streaming', 'waiting', 'restarting', 'stopping', 'UNKNOWN', null],
              description: "On a standby: its WAL receiver's status (streaming while connected to the primary).",
            },
          },
          additionalProperties: false,
        },
      },
      responses,
      ...(ledger ? { parameters: ledger.parameters } : {}),
      headers: {
        ...ledger?.headers,
        ...answerHeaderComponents(),
        'Retry-After': {
          description: `Seconds to wait before retrying: at most ${MAX_RETRY_AFTER_SECONDS} (a longer estimated wait, such as an overloaded write's queue, is sent as ${MAX_RETRY_AFTER_SECONDS}).`,
          required: true,
          schema: { type: 'integer', format: 'int32', minimum: 0, maximum: MAX_RETRY_AFTER_SECONDS },
        },
        Link: {
          description: 'RFC 8288 links to the `next`, `prev` and `first` pages.',
          required: true,
          schema: { type: 'string', maxLength: MAX_LINK_HEADER_LENGTH },
          example: '<https://api.example.com/api/methods/?page=3>; rel="next", <https://api.example.com/api/methods/?page=1>; rel="prev", <https://api.example.com/api/methods/?page=1>; rel="first"',
        },
      },
    },
  };
}

function tagOf(resource: ResourceDefinition): string {
  return capitalize(plural(resource.name));
}

function listOperation(resource: ResourceDefinition): JsonObject {
  const parent = resource.parent?.resource;
  const scope = parent ? `of the ${parent.name} (another organization's, or none, is a 404 \`not_found\` naming it)` : 'of your organization';
  return {
    operationId: `list${plural(resource.schemaName)}`,
    tags: [tagOf(resource)],
    summary: parent ? `List ${withArticle(parent.name)}'s ${plural(resource.name)}` : `List ${plural(resource.name)}`,
    description: `${resource.description}\n\nFilters combine with AND; with none, every ${resource.name} ${scope} is listed, ordered by \`${resource.defaultOrdering}\` unless \`order_by\` says otherwise. An unknown or repeated parameter is a 422 naming it.`,
    parameters: parent ? [parentUidParameter(parent), ...listParameters(resource)] : listParameters(resource),
    responses: {
      200: {
        description: `A page of ${plural(resource.name)}.`,
        headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' }, Link: { $ref: '#/components/headers/Link' } },
        content: { 'application/json': { schema: schemaRef(pageSchemaName(resource)) } },
      },
      ...errorResponses(parent ? NESTED_LIST_ERRORS : LIST_ERRORS),
    },
  };
}

function retrieveOperation(resource: ResourceDefinition): JsonObject {
  return {
    operationId: `retrieve${resource.schemaName}`,
    tags: [tagOf(resource)],
    summary: `Retrieve ${withArticle(resource.name)}`,
    description: `One ${resource.name} of your organization by its UID. The URL takes no query parameters (one given is a 422 naming it).`,
    parameters: [uidParameter(resource)],
    responses: {
      200: {
        description: `The ${resource.name}.`,
        headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
        content: { 'application/json': { schema: schemaRef(resource.schemaName) } },
      },
      ...errorResponses(RETRIEVE_ERRORS),
    },
  };
}

function healthOperation(): JsonObject {
  return {
    operationId: 'getHealth',
    tags: ['Health'],
    summary: 'Liveness',
    description: 'The process is up. No authentication.',
    security: [],
    responses: {
      200: {
        description: 'Alive.',
        headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
        content: { 'application/json': { schema: schemaRef('Health') } },
      },
      ...errorResponses(UNAUTHENTICATED_ERRORS),
    },
  };
}

function readyOperation(): JsonObject {
  return {
    operationId: 'getReadiness',
    tags: ['Health'],
    summary: 'Readiness',
    description: 'The database is reachable. No authentication.',
    security: [],
    responses: {
      200: {
        description: 'Ready to serve.',
        headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
        content: { 'application/json': { schema: schemaRef('Readiness') } },
      },
      ...errorResponses(UNAUTHENTICATED_ERRORS),
    },
  };
}

function referenceOperation(operationId: string, summary: string, description: string, mediaType: string, schema: JsonObject): JsonObject {
  return {
    operationId,
    tags: ['Reference'],
    summary,
    description,
    security: [],
    responses: {
      200: {
        description: summary,
        headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
        content: { [mediaType]: { schema } },
      },
      ...errorResponses(UNAUTHENTICATED_ERRORS),
    },
  };
}

/** One response per status; a status several of the codes share answers any of their problems. */
function errorResponses(codes: readonly ErrorCode[]): Record<string, JsonObject> {
  return Object.fromEntries([...codesByStatus(codes)].map(([status, shared]) => [status, problemResponseOfCodes(shared)]));
}
