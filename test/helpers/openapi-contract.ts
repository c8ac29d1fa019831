import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { LightMyRequestResponse as InjectResponse } from 'fastify';
import type { JsonObject } from '../../src/openapi/json-schema.js';
import { METHODS_NOT_ALLOWED } from '../../src/openapi/methods-not-allowed.js';

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const DOCUMENT_ID = 'https://lending-api.test/openapi.json';

/** Keywords of the OpenAPI 3.1 dialect that are not JSON Schema's. */
const OPENAPI_KEYWORDS = ['discriminator', 'xml', 'externalDocs', 'example'];

/** The methods an OpenAPI path item can declare as operations. */
export const OPENAPI_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * Headers HTTP itself sends, which OpenAPI does not declare (the spec ignores
 * a declared Content-Type: `content` says it).
 */
const TRANSPORT_HEADERS = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding']);

export interface ContractViolation {
  readonly where: string;
  readonly message: string;
}

/** A response as any client saw it: inject's, a raw socket's, or fetch's. */
export interface ObservedResponse {
  readonly status: number;
  readonly headers: Record<string, unknown>;
  /** The body's text; undefined when it was not read (a stream, or a HEAD answer). */
  readonly body: string | undefined;
}

export function observedOf(response: InjectResponse): ObservedResponse {
  return { status: response.statusCode, headers: response.headers, body: response.body };
}

/**
 * Checks real responses against the OpenAPI document: that the status is
 * documented for the operation, the content type is the documented one, the
 * body matches the documented schema, every required header is present and
 * valid, and every header sent is declared. Schemas are compiled in Ajv's
 * strict mode, so a keyword the document misspells fails too.
 */
export class OpenApiContract {
  readonly #document: JsonObject;
  readonly #ajv: Ajv2020;

  constructor(document: JsonObject) {
    this.#document = document;
    this.#ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(this.#ajv);
    for (const keyword of [...OPENAPI_KEYWORDS, 'openapi', 'info', 'tags', 'security', 'paths', 'components', 'webhooks', 'servers']) {
      this.#ajv.addKeyword(keyword);
    }
    // The whole document is one schema resource, so `#/components/…` refs resolve.
    this.#ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  }

  /**
   * Violations of `response` as an answer to `method pathTemplate` (e.g. `GET /api/methods/{uid}/`):
   * against the operation, or, for a method the path does not serve, against the path's
   * `x-methods-not-allowed` (its `answers`, and on a 405 the `Allow` it lists). A HEAD is
   * answered by the GET unless the document has a HEAD of its own.
   */
  check(method: string, pathTemplate: string, response: InjectResponse | ObservedResponse): ContractViolation[] {
    const given = 'statusCode' in response ? observedOf(response) : response;
    const asked = method.toLowerCase();
    // A HEAD answer has the headers of the GET (or of the refusal), and no body.
    const observed = asked === 'head' ? { ...given, body: undefined } : given;
    const pathPointer = `/paths/${escape(pathTemplate)}`;
    const pathItem = this.#resolve(pathPointer) as Record<string, unknown> | undefined;
    if (pathItem === undefined) return [{ where: pathPointer, message: 'path is not documented' }];
    const operation = asked === 'head' && !pathItem.head && pathItem.get ? 'get' : asked;
    if ((OPENAPI_METHODS as readonly string[]).includes(operation) && pathItem[operation] !== undefined) {
      return this.#checkAgainst(`${pathPointer}/${operation}/responses`, observed);
    }
    const notAllowed = pathItem[METHODS_NOT_ALLOWED] as { allow?: string[] } | undefined;
    const where = `${pathPointer}/${METHODS_NOT_ALLOWED}`;
    if (notAllowed === undefined) return [{ where: `${pathPointer}/${operation}`, message: 'operation is not documented' }];
    const allow = notAllowed.allow ?? [];
    if (allow.includes(method.toUpperCase())) return [{ where, message: `${method.toUpperCase()} is in allow but has no operation` }];
    const violations = this.#checkAgainst(`${where}/answers`, observed);
    if (observed.status === 405 && String(observed.headers.allow) !== allow.join(', ')) {
      violations.push({ where: `${where}/allow`, message: `Allow '${String(observed.headers.allow)}' is not the declared '${allow.join(', ')}'` });
    }
    return violations;
  }

  /** Violations against the Response Object of the status `response` has, in the Responses Object at `pointer`. */
  #checkAgainst(pointer: string, observed: ObservedResponse): ContractViolation[] {
    const responses = this.#resolve(pointer) as Record<string, unknown>;
    const key = [String(observed.status), `${String(observed.status).charAt(0)}XX`, 'default'].find((candidate) => candidate in responses);
    if (key === undefined) return [{ where: pointer, message: `status ${observed.status} is not documented` }];
    return this.checkResponseObject(`${pointer}/${key}`, observed);
  }

  /** Violations against a response object by JSON pointer, e.g. `/components/responses/MethodNotAllowed`. */
  checkResponseObject(pointer: string, response: InjectResponse | ObservedResponse): ContractViolation[] {
    const observed = 'statusCode' in response ? observedOf(response) : response;
    const { pointer: target, value } = this.#follow(pointer);
    const documented = value as { headers?: Record<string, JsonObject>; content?: Record<string, JsonObject> };
    const violations: ContractViolation[] = [];

    const mediaType = String(observed.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
    const content = documented.content ?? {};
    if (!(mediaType in content)) {
      if (mediaType !== '' || Object.keys(content).length > 0) {
        violations.push({ where: target, message: `content type '${mediaType}' is not one of ${Object.keys(content).join(', ')}` });
      }
    } else if (observed.body !== undefined) {
      const validate = this.#ajv.getSchema(`${DOCUMENT_ID}#${target}/content/${escape(mediaType)}/schema`);
      if (!validate) throw new Error(`no schema at ${target}`);
      const body: unknown = /[/+]json$/.test(mediaType) ? parseJson(observed.body) : observed.body;
      if (!validate(body)) violations.push(...describe(`${target} body`, validate.errors));
    }

    const declared = new Set(Object.keys(documented.headers ?? {}).map((name) => name.toLowerCase()));
    for (const name of Object.keys(observed.headers)) {
      if (!declared.has(name.toLowerCase()) && !TRANSPORT_HEADERS.has(name.toLowerCase())) {
        violations.push({ where: `${target}/headers`, message: `header ${name} was sent but is not declared` });
      }
    }
    for (const [name, header] of Object.entries(documented.headers ?? {})) {
      const { pointer: headerPointer, value: headerObject } = this.#follow(`${target}/headers/${escape(name)}`);
      const raw = observed.headers[name.toLowerCase()];
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

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { notJson: text.slice(0, 200) };
  }
}

function escape(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

function describe(where: string, errors: ErrorObject[] | null | undefined): ContractViolation[] {
  return (errors ?? []).map((error) => ({ where, message: `${error.instancePath || '(root)'} ${error.message ?? ''} ${JSON.stringify(error.params)}` }));
}
