import { describe, expect, it } from 'vitest';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';

type Operation = {
  operationId: string;
  parameters: ({ $ref: string } | { name: string; in: string })[];
  requestBody: { required: boolean; content: Record<string, unknown> };
  responses: Record<string, { content?: Record<string, { schema: { allOf?: { properties?: { code?: { enum?: string[] } } }[] } }>; $ref?: string }>;
};

describe('the OpenAPI document of the writes', () => {
  const document = lendingApiDocument() as { paths: Record<string, { post?: Operation }>; components: Record<string, Record<string, unknown>> };

  for (const [path, operationId] of [
    ['/api/limits/{uid}/drawdowns/', 'createDrawdown'],
    ['/api/limits/{uid}/repayments/', 'createRepayment'],
  ] as const) {
    it(`documents POST ${path} with its body, the Idempotency-Key header and every answer`, () => {
      const operation = document.paths[path]?.post;
      expect(operation?.operationId).toBe(operationId);
      expect(operation?.requestBody.required).toBe(true);
      expect(Object.keys(operation?.requestBody.content ?? {})).toEqual(['application/json']);
      expect(operation?.parameters).toContainEqual({ $ref: '#/components/parameters/Idempotency-Key' });
      expect(Object.keys(operation?.responses ?? {}).sort()).toEqual(['201', '400', '401', '403', '404', '409', '413', '415', '422', '429', '500', '503', '504']);
      const codesOf = (status: string) => operation?.responses[status]?.content?.['application/problem+json']?.schema.allOf?.[1]?.properties?.code?.enum;
      expect(codesOf('409')).toEqual(['insufficient_balance', 'repayment_exceeds_outstanding']);
      expect(codesOf('422')).toEqual(['invalid_body', 'idempotency_key_reused']);
      expect(codesOf('400')).toEqual(['invalid_json', 'idempotency_key_missing', 'idempotency_key_invalid']);
      expect(operation?.responses['403']).toEqual({ $ref: '#/components/responses/InsufficientScope' });
    });
  }

  it('documents the body as closed (no other member) and the header as required', () => {
    expect(document.components.schemas?.LedgerEntryInput).toMatchObject({ required: ['amount'], additionalProperties: false });
    expect(document.components.parameters?.['Idempotency-Key']).toMatchObject({ in: 'header', required: true });
  });
});
