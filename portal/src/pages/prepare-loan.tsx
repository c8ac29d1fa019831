import type { TargetedEvent, TargetedSubmitEvent } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { LoadingStatus, ProblemAlert } from '../components/status';
import { api, firstPages, withQuery } from '../lib/api';
import { money, newIdempotencyKey } from '../lib/format';
import type { CreditLimit, Entity, Loan, PaymentMethod } from '../lib/records';
import { href } from '../lib/router';
import { ProblemError } from '../lib/session';
import { useLoad } from '../lib/use-api';
import { Field } from './field';

/** Entities offered in the choice (10 pages); past that the entity is typed. */
const ENTITY_PAGES = 10;

/** Where each refusal is said: the field it concerns (SPEC §3b). */
function fieldOf(problem: ProblemError): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const error of problem.errors) fields[error.param === 'credit_limit' ? 'currency' : error.param] = error.detail;
  if (problem.code === 'insufficient_balance') fields.principal = problem.message;
  if (problem.status === 404) fields.payment_method = problem.message;
  return fields;
}

/** Entity → its payment methods in a currency → the limit's balance → the loan, one Idempotency-Key per form. */
export function PrepareLoan() {
  const [entity, setEntity] = useState('');
  const [currency, setCurrency] = useState('');
  const [method, setMethod] = useState('');
  const [principal, setPrincipal] = useState('');
  const [reference, setReference] = useState('');
  // The last body sent and its key, kept while its outcome may be a loan: sending the same body again (a second
  // click, a retry after a lost answer or a 5xx, the same values typed again) sends the same key, so it lends once.
  const lastSent = useRef<{ body: string; key: string } | undefined>(undefined);
  const inFlight = useRef(false);
  const [sending, setSending] = useState(false);
  const [problem, setProblem] = useState<ProblemError | Error | undefined>();
  const [created, setCreated] = useState<{ loan: Loan; limit: CreditLimit } | undefined>();

  const entities = useLoad('entities', (signal) => firstPages<Entity>('/api/entities/?order_by=name', ENTITY_PAGES, signal));
  const limitsPath = entity ? withQuery('/api/limits/', { entity }) : null;
  const limits = useLoad(limitsPath, (signal) => firstPages<CreditLimit>(limitsPath!, 5, signal));
  const methodsPath = entity && currency ? withQuery('/api/methods/', { entity, currency }) : null;
  const methods = useLoad(methodsPath, (signal) => firstPages<PaymentMethod>(methodsPath!, 5, signal));
  const limit = limits.data?.items.find((candidate) => candidate.currency === currency);
  const currencies = [...new Set(limits.data?.items.map((candidate) => candidate.currency) ?? [])].sort();

  /** A change of the form's values: the last answer no longer applies (the key is chosen when sending). */
  const changed = (set: (value: string) => void) => (event: TargetedEvent<HTMLInputElement | HTMLSelectElement>) => {
    set(event.currentTarget.value);
    setProblem(undefined);
  };

  const submit = async (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (inFlight.current || !limit) return;
    inFlight.current = true;
    setSending(true);
    setProblem(undefined);
    try {
      const body: Record<string, string> = { credit_limit: limit.uid, payment_method: method, principal };
      if (reference.trim()) body.reference = reference.trim();
      const sent = JSON.stringify(body);
      // A new key only for another body: the same body keeps the key it was last sent with.
      const key = lastSent.current?.body === sent ? lastSent.current.key : newIdempotencyKey();
      lastSent.current = { body: sent, key };
      const answer = await api<{ loan: Loan; limit: CreditLimit }>('/api/loans/', { method: 'POST', body, idempotencyKey: key });
      setCreated(answer);
      lastSent.current = undefined;
      setPrincipal('');
      setReference('');
      limits.reload();
    } catch (error) {
      // Refused (a 4xx other than a timeout): no loan was made, so the same values may be sent again as a new
      // request (after a top-up, say) rather than replaying the refusal. No answer, or a 5xx: the key is kept.
      if (error instanceof ProblemError && error.status >= 400 && error.status < 500 && error.status !== 408) lastSent.current = undefined;
      setProblem(error instanceof Error ? error : new Error(String(error)));
    } finally {
      inFlight.current = false;
      setSending(false);
    }
  };

  const fields = problem instanceof ProblemError ? fieldOf(problem) : {};
  const tooManyEntities = (entities.data?.count ?? 0) > (entities.data?.items.length ?? 0);
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">Prepare a loan</h1>
      <p>Choose the entity, then a currency it has a credit limit in, then one of its payment methods in that currency.</p>
      <LoadingStatus loading={entities.loading || limits.loading || methods.loading} />
      <ProblemAlert error={entities.error ?? limits.error ?? methods.error} />
      <form class="loan-form" onSubmit={submit} aria-label="Loan" noValidate>
        <Field id="loan-entity" label="Entity" error={fields.entity}>
          {tooManyEntities ? (
            <input type="text" value={entity} onChange={changed(setEntity)} placeholder="ent_…" />
          ) : (
            <select value={entity} onChange={changed(setEntity)}>
              <option value="">choose an entity</option>
              {entities.data?.items.map((e) => (
                <option value={e.uid} key={e.uid}>
                  {e.name} ({e.uid})
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field id="loan-currency" label="Currency" error={fields.currency} hint={entity && limits.data && currencies.length === 0 ? 'This entity has no credit limit.' : undefined}>
          <select value={currency} onChange={changed(setCurrency)} disabled={!entity}>
            <option value="">choose a currency</option>
            {currencies.map((c) => (
              <option value={c} key={c}>
                {c}
              </option>
            ))}
          </select>
        </Field>
        {limit ? (
          <p class="balance" id="loan-balance">
            Credit limit <a href={href(`limits/${limit.uid}`)}>{limit.uid}</a>: {money(limit.balance, limit.currency)} available of{' '}
            {money(limit.capacity, limit.currency)}.
          </p>
        ) : null}
        <Field id="loan-method" label="Payment method" error={fields.payment_method}>
          <select value={method} onChange={changed(setMethod)} disabled={!currency}>
            <option value="">choose a payment method</option>
            {methods.data?.items.map((m) => (
              <option value={m.uid} key={m.uid}>
                {m.type} …{m.last_2} ({m.uid})
              </option>
            ))}
          </select>
        </Field>
        <Field id="loan-principal" label="Principal" error={fields.principal} hint="Up to 2 decimals, such as 1200.50.">
          <input type="text" inputMode="decimal" value={principal} onInput={changed(setPrincipal)} autocomplete="off" />
        </Field>
        <Field id="loan-reference" label="Reference (optional)" error={fields.reference} hint="Your own loan or invoice number.">
          <input type="text" value={reference} onInput={changed(setReference)} autocomplete="off" />
        </Field>
        <div class="actions">
          <button type="submit" disabled={sending || !limit || !method || !principal}>
            {sending ? 'Creating the loan…' : 'Create the loan'}
          </button>
        </div>
      </form>
      {Object.keys(fields).length === 0 ? <ProblemAlert error={problem} /> : <ProblemAlert error={problem} title="The loan was refused" />}
      {created ? (
        <div role="status" class="notice">
          Loan {created.loan.uid} created: {money(created.loan.principal, created.loan.currency)} on {created.loan.credit_limit}, which has{' '}
          {money(created.limit.balance, created.limit.currency)} left. <a href={href('loans', { credit_limit: created.loan.credit_limit })}>Its loans</a>
        </div>
      ) : null}
    </section>
  );
}
