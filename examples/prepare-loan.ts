/**
 * Create a loan: find where to pay the money out, check that the entity's
 * credit limit can take it, then create the loan on that limit (the service
 * draws its principal in the same transaction, and refuses with 409 if the
 * balance went meanwhile).
 *
 *   LENDING_API_KEY=<write key> npm run example:prepare-loan -- --entity ent_demo_03 --currency USD --amount 5000 --loan loan-17
 *
 * `--loan` is your id for the loan: its reference and its Idempotency-Key,
 * so running the command again for the same loan (after a crash, a timeout,
 * a lost answer) lends once: a run first looks for a loan with that
 * reference among the entity's loans in that currency, and if an earlier run
 * created it, says so (ALREADY LENT) and lends nothing. Without it a fresh id
 * is made up and printed. `--check-only` decides and creates nothing (a read
 * key is enough for that).
 *
 * Reads LENDING_API_URL (default http://127.0.0.1:3000), LENDING_API_ORG
 * (default org_demo) and LENDING_API_KEY, or the flags --url, --org, --key.
 * Exits 0 when the loan can go ahead (and was created) or was created before, 2 when it cannot, 1 on an error.
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  LendingApiError,
  LendingClient,
  type CreditLimit,
  type Loan,
  type LoanCreated,
  type PaymentMethod,
  type RetryEvent,
} from 'lending-api-client';

export interface LoanRequest {
  readonly entity: string;
  /** ISO 4217 code, any letter case. */
  readonly currency: string;
  /** A positive decimal with at most two fractional digits, e.g. `5000` or `1250.50`. */
  readonly amount: string;
}

export type LoanDecision =
  | {
      readonly ready: true;
      readonly request: LoanRequest;
      readonly paymentMethod: PaymentMethod;
      readonly creditLimit: CreditLimit;
      /** What the limit's balance will be once the loan is drawn. */
      readonly balanceAfter: number;
    }
  | {
      readonly ready: false;
      readonly request: LoanRequest;
      readonly reason: 'no_payment_method' | 'no_credit_limit' | 'insufficient_balance';
      readonly message: string;
      readonly paymentMethod?: PaymentMethod;
      readonly creditLimit?: CreditLimit;
    };

/** Decides whether `request` can go ahead, from the entity's payment methods and credit limits. */
export async function prepareLoan(client: LendingClient, request: LoanRequest): Promise<LoanDecision> {
  const currency = request.currency.toUpperCase();
  const amountCents = toCents(request.amount);
  const normalized = { ...request, currency };

  // Newest first (the default order): the most recently added account is the one to use.
  const paymentMethod = await first(client.paymentMethods.listAll({ entity: request.entity, currency }));
  if (!paymentMethod) {
    return { ready: false, request: normalized, reason: 'no_payment_method', message: `${request.entity} has no payment method in ${currency}` };
  }

  // Limits have no currency filter; an entity holds few of them.
  let creditLimit: CreditLimit | undefined;
  for await (const limit of client.creditLimits.listAll({ entity: request.entity, order_by: '-balance' })) {
    if (limit.currency === currency) {
      creditLimit = limit;
      break;
    }
  }
  if (!creditLimit) {
    return { ready: false, request: normalized, reason: 'no_credit_limit', message: `${request.entity} has no credit limit in ${currency}`, paymentMethod };
  }

  const balanceCents = Math.round(creditLimit.balance * 100);
  if (balanceCents < amountCents) {
    return {
      ready: false,
      request: normalized,
      reason: 'insufficient_balance',
      message: `credit limit ${creditLimit.uid} has only ${money(balanceCents)} ${currency} available, ${money(amountCents)} asked`,
      paymentMethod,
      creditLimit,
    };
  }
  return { ready: true, request: normalized, paymentMethod, creditLimit, balanceAfter: (balanceCents - amountCents) / 100 };
}

export interface EarlierLoan {
  readonly loan: Loan;
  /** Its credit limit as it is now. */
  readonly limit: CreditLimit;
}

/**
 * The loan an earlier run created for `loanId` (its reference) for the
 * entity in the currency, or undefined. A rerun must not decide afresh: the
 * balance it would see already has this loan taken from it.
 */
export async function findLoan(client: LendingClient, request: Omit<LoanRequest, 'amount'>, loanId: string): Promise<EarlierLoan | undefined> {
  for await (const loan of client.loans.listAll({ entity: request.entity, currency: request.currency.toUpperCase() })) {
    if (loan.reference === loanId) return { loan, limit: await client.creditLimits.retrieve(loan.credit_limit) };
  }
  return undefined;
}

export function describeEarlierLoan({ loan, limit }: EarlierLoan): string {
  return (
    `ALREADY LENT ${loan.uid} (loan ${loan.reference ?? '—'}) of ${money(Math.round(loan.principal * 100))} ${loan.currency}, created ${loan.created_at}: ` +
    `nothing lent now; ${limit.uid} has ${money(Math.round(limit.balance * 100))} ${limit.currency} left`
  );
}

/**
 * Creates the loan on the limit `prepareLoan` chose, paid out to the method
 * it chose. The loan id is the Idempotency-Key: the SDK sends it on each of
 * its own retries, and a second run for the same loan is answered from the
 * first, so one loan is made. A balance spent meanwhile by someone else is a
 * 409 `insufficient_balance` (a `LendingApiError`), and nothing is lent.
 */
export function createLoan(client: LendingClient, decision: LoanDecision & { ready: true }, loanId: string): Promise<LoanCreated> {
  return client.loans.create(
    { credit_limit: decision.creditLimit.uid, payment_method: decision.paymentMethod.uid, principal: decision.request.amount, reference: loanId },
    { idempotencyKey: loanId },
  );
}

export function describeLoan({ loan, limit }: LoanCreated): string {
  return `LENT      ${loan.uid} (loan ${loan.reference ?? '—'}): ${limit.uid} has ${money(Math.round(limit.balance * 100))} ${limit.currency} left`;
}

export function describeDecision(decision: LoanDecision): string {
  const { entity, currency, amount } = decision.request;
  const asked = `${money(toCents(amount))} ${currency}`;
  if (!decision.ready) return `DECLINED  ${entity} cannot borrow ${asked}: ${decision.message}`;
  const { paymentMethod: method, creditLimit: limit } = decision;
  return [
    `READY     ${entity} can borrow ${asked}`,
    `  pay out to   ${method.type} account ending ${method.last_2} (${method.uid})`,
    `  credit limit ${limit.uid}: ${money(Math.round(limit.balance * 100))} of ${money(Math.round(limit.capacity * 100))} ${currency} available, ${money(Math.round(decision.balanceAfter * 100))} after this loan`,
  ].join('\n');
}

/** The line printed (to stderr) before the client waits to retry a 429 or 503, or a loan creation that got no answer. */
export function describeRetry({ attempt, delayMs, error }: RetryEvent): string {
  const what = error instanceof LendingApiError ? `${error.detail} (${error.code}, HTTP ${error.status})` : `no answer (${error.message})`;
  return `prepare-loan: ${what}; retrying in ${(delayMs / 1000).toFixed(1)} s (attempt ${attempt + 1})`;
}

function toCents(amount: string): number {
  const match = /^([0-9]+)(?:\.([0-9]{1,2}))?$/.exec(amount.trim());
  if (!match?.[1]) throw new RangeError(`amount must be a positive decimal with at most 2 fractional digits, got '${amount}'`);
  const cents = Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
  if (cents <= 0 || !Number.isSafeInteger(cents)) throw new RangeError(`amount must be positive, got '${amount}'`);
  return cents;
}

function money(cents: number): string {
  return (cents / 100).toFixed(2);
}

async function first<T>(items: AsyncIterable<T>): Promise<T | undefined> {
  for await (const item of items) return item;
  return undefined;
}

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      entity: { type: 'string' },
      currency: { type: 'string' },
      amount: { type: 'string' },
      url: { type: 'string' },
      org: { type: 'string' },
      key: { type: 'string' },
      loan: { type: 'string' },
      'check-only': { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  const { entity, currency, amount } = values;
  const apiKey = values.key ?? env.LENDING_API_KEY;
  if (!entity || !currency || !amount) throw new UsageError('give --entity, --currency and --amount');
  if (!apiKey) throw new UsageError('give the API key in LENDING_API_KEY (or --key); `bin/lending-api demo --serve` prints one');

  const client = new LendingClient({
    baseUrl: values.url ?? env.LENDING_API_URL ?? 'http://127.0.0.1:3000',
    organizationId: values.org ?? env.LENDING_API_ORG ?? 'org_demo',
    apiKey,
    // Rate limited, the database briefly away, a loan's answer lost: say so instead of waiting in silence.
    onRetry: (event) => console.error(describeRetry(event)),
  });
  if (values.loan !== undefined) {
    const earlier = await findLoan(client, { entity, currency }, values.loan);
    if (earlier) {
      if (Math.round(earlier.loan.principal * 100) !== toCents(amount)) {
        throw new UsageError(`loan ${values.loan} was created earlier for ${money(Math.round(earlier.loan.principal * 100))} ${earlier.loan.currency} (${earlier.loan.uid}), not ${money(toCents(amount))}; a different loan needs its own --loan`);
      }
      console.log(values.json ? JSON.stringify({ already_lent: earlier }, null, 2) : describeEarlierLoan(earlier));
      return 0;
    }
  }
  const decision = await prepareLoan(client, { entity, currency, amount });
  if (!decision.ready || values['check-only']) {
    console.log(values.json ? JSON.stringify(decision, null, 2) : describeDecision(decision));
    return decision.ready ? 0 : 2;
  }
  const loanId = values.loan ?? `loan-${randomUUID()}`;
  const created = await createLoan(client, decision, loanId);
  console.log(values.json ? JSON.stringify({ ...decision, created }, null, 2) : `${describeDecision(decision)}\n${describeLoan(created)}`);
  return 0;
}

class UsageError extends Error {}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2), process.env).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      if (error instanceof LendingApiError) {
        console.error(`prepare-loan: ${error.detail} (${error.code}, HTTP ${error.status}, request ${error.requestId ?? 'unknown'})`);
      } else {
        console.error(`prepare-loan: ${error instanceof Error ? error.message : String(error)}`);
      }
      process.exitCode = 1;
    },
  );
}
