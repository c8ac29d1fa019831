import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { DOCS_CSP } from '../domain/header-values.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import { lendingApiDocument } from '../openapi/lending-api-document.js';
import { GENERATED_IDEMPOTENCY_KEY, referencePageDocument } from '../openapi/reference-page-document.js';

export interface ApiReferenceRoutesOptions {
  resources: readonly ResourceDefinition[];
}

export const OPENAPI_PATH = '/api/openapi.json';
export const DOCS_PATH = '/docs';

/**
 * `GET /api/openapi.json` (the document generated from the resource
 * definitions) and `GET /docs` (Swagger UI on that document). No
 * authentication: neither tells anything about an organization.
 */
export async function apiReferenceRoutes(app: FastifyInstance, options: ApiReferenceRoutesOptions): Promise<void> {
  const document = lendingApiDocument(options.resources);
  const body = JSON.stringify(document);

  app.get(OPENAPI_PATH, async (_request, reply) => reply.type('application/json; charset=utf-8').send(body));

  await app.register(fastifySwagger, { mode: 'static', specification: { document: referencePageDocument(document) as never } });
  await app.register(fastifySwaggerUi, {
    routePrefix: DOCS_PATH,
    staticCSP: DOCS_CSP,
    theme: { title: 'lending-api — API reference' },
    uiConfig: {
      // No top bar: it would offer to explore any URL, and show Fastify's logo.
      layout: 'BaseLayout',
      docExpansion: 'list',
      deepLinking: true,
      defaultModelsExpandDepth: 1,
      displayOperationId: false,
      tryItOutEnabled: false,
      persistAuthorization: false,
      // Runs in the page (serialized as source, so it names nothing outside itself): a fresh key per Execute.
      requestInterceptor: new Function(
        'request',
        `const name = Object.keys(request.headers).find((header) => header.toLowerCase() === 'idempotency-key');
        if (name && request.headers[name] === ${JSON.stringify(GENERATED_IDEMPOTENCY_KEY)}) {
          const bytes = crypto.getRandomValues(new Uint8Array(16));
          bytes[6] = (bytes[6] & 0x0f) | 0x40;
          bytes[8] = (bytes[8] & 0x3f) | 0x80;
          const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
          request.headers[name] = [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-');
        }
        return request;`,
      ) as never,
    },
  });
}
