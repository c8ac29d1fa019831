import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { LightMyRequestResponse as InjectResponse } from 'fastify';
import type { JsonObject } from '../../src/openapi/json-schema.js';

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const DOCUMENT_ID = 'https://lending-api.test/openapi.json';

/** Keywords of the OpenAPI 3.1 dialect that are not JSON Schema's. */
const OPENAPI_KEYWORDS = ['discriminator', 'xml', 'externalDocs', 'example'];

export interface ContractViolation {
  readonly where: string;
  readonly message: string;
}

/**
 * Checks real responses against the OpenAPI document: that the status is
 * documented for the operation, the content type is the documented one, the
 * body matches the documented schema, and every required header is present
 * and valid. Schemas are compiled in Ajv's strict mode, so a keyword the
 * document misspells fails too.
 */
export class OpenApiContract {
  readonly #document: JsonObject;
  readonly #ajv: Ajv2020;

  constructor(document: JsonObject) {
    this.#document = document;
    this.#ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(this.#ajv);
    for (const keyword of [...OPENAPI_KEYWORDS, 'openapi', 'info', 'tags', 'security', 'paths', 'components', 'webhooks']) {
      this.#ajv.addKeyword(keyword);
    }
    // The whole document is one schema resource, so `#/components/…` refs resolve.
    this.#ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  }

  /** Violations of `response` as an answer to `method pathTemplate` (e.g. `GET /api/methods/{uid}/`). */
  check(method: string, pathTemplate: string, response: InjectResponse): ContractViolation[] {
    const operationPointer = `/paths/${escape(pathTemplate)}/${method.toLowerCase()}`;
    if (!this.#resolve(operationPointer)) return [{ where: operationPointer, message: 'operation is not documented' }];
    const responsePointer = `${operationPointer}/responses/${response.statusCode}`;
    if (!this.#resolve(responsePointer)) return [{ where: responsePointer, message: `status ${response.statusCode} is not documented` }];
    return this.checkResponseObject(responsePointer, response);
  }

  /** Violations against a response object by JSON pointer, e.g. `/components/responses/MethodNotAllowed`. */
  checkResponseObject(pointer: string, response: InjectResponse): ContractViolation[] {
    const { pointer: target, value } = this.#follow(pointer);
    const documented = value as { headers?: Record<string, JsonObject>; content?: Record<string, JsonObject> };
    const violations: ContractViolation[] = [];

    const mediaType = String(response.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
    const content = documented.content ?? {};
    if (!(mediaType in content)) {
      violations.push({ where: target, message: `content type '${mediaType}' is not one of ${Object.keys(content).join(', ')}` });
    } else {
      const validate = this.#ajv.getSchema(`${DOCUMENT_ID}#${target}/content/${escape(mediaType)}/schema`);
      if (!validate) throw new Error(`no schema at ${target}`);
      const body: unknown = /[/+]json$/.test(mediaType) ? response.json() : response.body;
      if (!validate(body)) violations.push(...describe(`${target} body`, validate.errors));
    }

    for (const [name, header] of Object.entries(documented.headers ?? {})) {
      const { pointer: headerPointer, value: headerObject } = this.#follow(`${target}/headers/${escape(name)}`);
      const raw = response.headers[name.toLowerCase()];
      if (raw === undefined) {
        if ((headerObject as { required?: boolean }).required) violations.push({ where: headerPointer, message: `required header ${name} is missing` });
        continue;
      }
      const validate = this.#ajv.getSchema(`${DOCUMENT_ID}#${headerPointer}/schema`);
      if (!validate) throw new Error(`no schema for header ${name} (${JSON.stringify(header)})`);
      const schemaType = (this.#resolve(`${headerPointer}/schema`) as { type?: string }).type;
      const value = schemaType === 'integer' ? Number(raw) : String(raw);
      if (!validate(value)) violations.push(...describe(`${headerPointer} value '${String(raw)}'`, validate.errors));
    }
    return violations;
  }

  /** Follows `$ref`s until a value that is not a reference. */
  #follow(pointer: string): { pointer: string; value: unknown } {
    let current = pointer;
    for (;;) {
      const value = this.#resolve(current) as { $ref?: string } | undefined;
      if (!value) throw new Error(`nothing at ${current}`);
      if (typeof value.$ref !== 'string') return { pointer: current, value };
      current = value.$ref.replace(/^#/, '');
    }
  }

  #resolve(pointer: string): unknown {
    let value: unknown = this.#document;
    for (const part of pointer.split('/').slice(1)) {
      if (typeof value !== 'object' || value === null) return undefined;
      value = (value as Record<string, unknown>)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    }
    return value;
  }
}

function escape(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

function describe(where: string, errors: ErrorObject[] | null | undefined): ContractViolation[] {
  return (errors ?? []).map((error) => ({ where, message: `${error.instancePath || '(root)'} ${error.message ?? ''} ${JSON.stringify(error.params)}` }));
}
