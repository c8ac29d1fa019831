import type { PresentedCredential } from '../domain/credential-in-text.js';
import { ApiError, type ParamError } from '../domain/errors.js';
import { ASCII_CONTROL_CHARACTERS, hasLoneSurrogate } from '../domain/well-formed-text.js';
import { amountOf, parseBodyObject, referenceOf, refuseUnknownMembers, typeName } from './write-body.js';

/** A `POST /api/loans/` body, validated and canonical. */
export interface LoanBody {
  readonly credit_limit: string;
  readonly payment_method: string;
  /** Canonical amount with two decimals. */
  readonly principal: string;
  readonly reference?: string;
}

export const LOAN_BODY_MEMBERS = ['credit_limit', 'payment_method', 'principal', 'reference'] as const;
const MAX_UID_LENGTH = 255;

/** Parses a loan's body: a 400 for malformed JSON, one 422 naming every invalid member otherwise (a reference holding a credential among them). */
export function parseLoanBody(raw: string | undefined, presented?: PresentedCredential): LoanBody {
  const body = parseBodyObject(raw, 'credit_limit', '{"credit_limit": "cl_1", "payment_method": "pm_1", "principal": "5000.00"}');
  const errors: ParamError[] = refuseUnknownMembers(body, LOAN_BODY_MEMBERS);
  const creditLimit = uidOf('credit_limit', body.credit_limit, errors);
  const paymentMethod = uidOf('payment_method', body.payment_method, errors);
  const principal = amountOf(body.principal, errors, 'principal');
  const reference = referenceOf(body.reference, errors, presented);
  if (errors.length > 0 || creditLimit === undefined || paymentMethod === undefined || principal === undefined) throw ApiError.invalidBody(errors);
  return { credit_limit: creditLimit, payment_method: paymentMethod, principal, ...(reference === undefined ? {} : { reference }) };
}

function uidOf(name: string, value: unknown, errors: ParamError[]): string | undefined {
  if (value === undefined) {
    errors.push({ param: name, detail: `${name} is required: the uid of the ${name.replace('_', ' ')}` });
    return undefined;
  }
  if (typeof value !== 'string') {
    errors.push({ param: name, detail: `${name} must be a uid string, got ${typeName(value)}` });
    return undefined;
  }
  if (value.length === 0 || value.length > MAX_UID_LENGTH || value.search(ASCII_CONTROL_CHARACTERS) !== -1 || hasLoneSurrogate(value)) {
    errors.push({ param: name, detail: `${name} must be a uid of 1–${MAX_UID_LENGTH} characters, well-formed, without control characters` });
    return undefined;
  }
  return value;
}
