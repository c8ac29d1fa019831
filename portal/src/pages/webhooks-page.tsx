import type { TargetedSubmitEvent } from 'preact';
import { useState } from 'preact/hooks';
import { HealthSummary } from '../components/health-summary';
import { SecretReveal } from '../components/secret-reveal';
import { LoadingStatus, ProblemAlert, ScrollTable } from '../components/status';
import { api, type Page } from '../lib/api';
import type { WebhookEndpoint } from '../lib/records';
import { href } from '../lib/router';
import { ProblemError } from '../lib/session';
import { useLoad } from '../lib/use-api';
import { Field } from './field';

/** "credit_limit.*, loan.repaid" → the list the API takes. */
export function eventList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((item) => item.trim())
    .filter(Boolean);
}

/** The organization's endpoints with their health, and a form to add one (its secret shown once). */
export function WebhooksPage() {
  const list = useLoad('endpoints', (signal) => api<Page<WebhookEndpoint>>('/api/webhook_endpoints/', { signal }));
  const [secret, setSecret] = useState<string | undefined>();
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">Webhook endpoints</h1>
      <LoadingStatus loading={list.loading} done={list.data ? `${list.data.count} endpoints.` : undefined} />
      <ProblemAlert error={list.error} />
      {list.data ? (
        <ScrollTable label="Webhook endpoints, scrollable">
          <table class="records">
            <caption>Webhook endpoints: {list.data.count} of at most 16</caption>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Description</th>
                <th scope="col">Events</th>
                <th scope="col">Health</th>
              </tr>
            </thead>
            <tbody>
              {list.data.items.map((endpoint) => (
                <tr key={endpoint.id}>
                  <th scope="row">
                    <a href={href(`webhooks/${endpoint.id}`)}>{endpoint.url}</a>
                  </th>
                  <td>{endpoint.description ?? '—'}</td>
                  <td>{endpoint.enabled_events.join(', ')}</td>
                  <td>
                    <HealthSummary health={endpoint.health} disabled={endpoint.disabled} compact />
                  </td>
                </tr>
              ))}
              {list.data.items.length === 0 ? (
                <tr>
                  <td colSpan={4}>No endpoints yet: add one below.</td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </ScrollTable>
      ) : null}
      {secret ? <SecretReveal secret={secret} onDismiss={() => setSecret(undefined)} /> : null}
      <CreateEndpoint
        onCreated={(endpoint) => {
          setSecret(endpoint.secret);
          list.reload();
        }}
      />
    </section>
  );
}

function CreateEndpoint({ onCreated }: { onCreated: (endpoint: WebhookEndpoint) => void }) {
  const [sending, setSending] = useState(false);
  const [problem, setProblem] = useState<Error | undefined>();
  const submit = async (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (sending) return;
    const form = event.currentTarget;
    const data = new FormData(form);
    const body: Record<string, unknown> = { url: String(data.get('url') ?? ''), enabled_events: eventList(String(data.get('enabled_events') ?? '')) };
    const description = String(data.get('description') ?? '').trim();
    if (description) body.description = description;
    setSending(true);
    setProblem(undefined);
    try {
      const endpoint = await api<WebhookEndpoint>('/api/webhook_endpoints/', { method: 'POST', body });
      form.reset();
      onCreated(endpoint);
    } catch (error) {
      setProblem(error instanceof Error ? error : new Error(String(error)));
    } finally {
      setSending(false);
    }
  };
  const fields = problem instanceof ProblemError ? Object.fromEntries(problem.errors.map((error) => [error.param, error.detail])) : {};
  return (
    <form class="endpoint-form" onSubmit={submit} aria-labelledby="create-title">
      <h2 id="create-title">Add an endpoint</h2>
      <Field id="create-url" label="URL" error={fields.url} hint="Where the events are sent (https://…).">
        <input name="url" type="url" required autocomplete="off" />
      </Field>
      <Field id="create-description" label="Description (optional)" error={fields.description}>
        <input name="description" type="text" autocomplete="off" />
      </Field>
      <Field id="create-events" label="Events" error={fields.enabled_events} hint="Types or prefixes, separated by commas: credit_limit.*, loan.repaid; * for all.">
        <input name="enabled_events" type="text" defaultValue="*" autocomplete="off" />
      </Field>
      <div class="actions">
        <button type="submit" disabled={sending}>
          {sending ? 'Adding…' : 'Add the endpoint'}
        </button>
      </div>
      <ProblemAlert error={problem} />
    </form>
  );
}
