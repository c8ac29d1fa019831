import type { TargetedSubmitEvent } from 'preact';
import { useState } from 'preact/hooks';
import { HealthSummary } from '../components/health-summary';
import { SecretReveal } from '../components/secret-reveal';
import { LoadingStatus, Notice, ProblemAlert } from '../components/status';
import { api } from '../lib/api';
import type { WebhookEndpoint } from '../lib/records';
import { href, navigate, type Location } from '../lib/router';
import { ProblemError } from '../lib/session';
import { useLoad } from '../lib/use-api';
import { Attempts } from './attempts';
import { Field } from './field';
import { eventList } from './webhooks-page';

/** One endpoint: its health, test, replay, enable/disable, rotation, edit and delete, and its attempts. */
export function EndpointPage({ id, location }: { id: string; location: Location }) {
  const path = `/api/webhook_endpoints/${encodeURIComponent(id)}/`;
  const endpoint = useLoad(path, (signal) => api<WebhookEndpoint>(path, { signal }));
  const [notice, setNotice] = useState('');
  const [problem, setProblem] = useState<Error | undefined>();
  const [secret, setSecret] = useState<string | undefined>();
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [busy, setBusy] = useState(false);

  const act = async (what: () => Promise<string>) => {
    if (busy) return;
    setBusy(true);
    setProblem(undefined);
    setNotice('');
    try {
      setNotice(await what());
      endpoint.reload();
    } catch (error) {
      setProblem(error instanceof Error ? error : new Error(String(error)));
    } finally {
      setBusy(false);
    }
  };
  const e = endpoint.data;
  const test = () =>
    act(async () => {
      const answer = await api<{ ok: boolean; status_code: number | null; error: string | null; duration_ms: number }>(`${path}test/`, { method: 'POST', body: {} });
      return answer.ok
        ? `Test event delivered: the receiver answered ${answer.status_code} in ${answer.duration_ms} ms.`
        : `Test event failed: ${answer.error ?? `the receiver answered ${answer.status_code}`}.`;
    });
  const toggle = () =>
    act(async () => {
      const updated = await api<WebhookEndpoint>(path, { method: 'POST', body: { disabled: !e?.disabled } });
      return updated.disabled ? 'Endpoint disabled: its pending deliveries are cancelled.' : 'Endpoint enabled.';
    });
  const rotate = () =>
    act(async () => {
      const rotated = await api<WebhookEndpoint>(`${path}rotate_secret/`, { method: 'POST', body: {} });
      setSecret(rotated.secret);
      return 'Secret rotated: the old one keeps signing for 24 hours beside the new one.';
    });
  const remove = () =>
    act(async () => {
      await api(path, { method: 'DELETE' });
      navigate(href('webhooks'));
      return 'Endpoint deleted.';
    });
  const replay = (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    const since = String(new FormData(event.currentTarget).get('since') ?? '').trim();
    void act(async () => {
      const answer = await api<{ count: number; has_more: boolean }>(`${path}replay/`, { method: 'POST', body: { since } });
      return `${answer.count} failed event${answer.count === 1 ? '' : 's'} queued again${answer.has_more ? '; more remain: replay again' : ''}.`;
    });
  };
  const fields = problem instanceof ProblemError ? Object.fromEntries(problem.errors.map((error) => [error.param, error.detail])) : {};
  return (
    <section aria-labelledby="page-title">
      <p>
        <a href={href('webhooks')}>All endpoints</a>
      </p>
      <h1 id="page-title">Endpoint {e ? e.url : id}</h1>
      <LoadingStatus loading={endpoint.loading} />
      <ProblemAlert error={endpoint.error} />
      <ProblemAlert error={problem} />
      {notice ? <Notice>{notice}</Notice> : null}
      {secret ? <SecretReveal secret={secret} onDismiss={() => setSecret(undefined)} /> : null}
      {e ? (
        <>
          <h2>Health</h2>
          <HealthSummary health={e.health} disabled={e.disabled} />
          {e.disabled ? <p>Disabled ({e.disabled_reason === 'failing' ? 'every attempt failed for 3 days' : 'by request'}).</p> : null}
          <h2>Actions</h2>
          <div class="actions">
            <button type="button" onClick={test} disabled={busy}>
              Send a test event
            </button>
            <button type="button" onClick={toggle} disabled={busy}>
              {e.disabled ? 'Enable' : 'Disable'}
            </button>
            <button type="button" onClick={rotate} disabled={busy}>
              Rotate the secret
            </button>
            {confirmDelete ? null : (
              <button type="button" class="danger" onClick={() => setConfirmDelete(true)} disabled={busy}>
                Delete…
              </button>
            )}
          </div>
          {confirmDelete ? (
            <div class="confirm" role="group" aria-labelledby="confirm-text">
              <p id="confirm-text">Delete this endpoint? Its pending deliveries stop and it cannot be undone.</p>
              <button type="button" class="danger" onClick={remove} disabled={busy}>
                Yes, delete the endpoint
              </button>{' '}
              <button type="button" onClick={() => setConfirmDelete(false)}>
                Cancel
              </button>
            </div>
          ) : null}
          <form class="replay-form" onSubmit={replay} aria-labelledby="replay-title">
            <h2 id="replay-title">Replay failures</h2>
            <Field id="replay-since" label="Failed since" error={fields.since} hint="A date (2026-11-28) or a time (2026-11-28T09:00:00Z); up to now.">
              <input name="since" type="text" required defaultValue={new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)} autocomplete="off" />
            </Field>
            <div class="actions">
              <button type="submit" disabled={busy}>
                Replay what failed
              </button>
            </div>
          </form>
          <EditEndpoint
            key={e.updated_at}
            endpoint={e}
            onSaved={() => {
              setNotice('Endpoint saved.');
              endpoint.reload();
            }}
          />
          <Attempts endpoint={id} location={location} />
        </>
      ) : null}
    </section>
  );
}

function EditEndpoint({ endpoint, onSaved }: { endpoint: WebhookEndpoint; onSaved: () => void }) {
  const [problem, setProblem] = useState<Error | undefined>();
  const [sending, setSending] = useState(false);
  const submit = async (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const body = {
      url: String(data.get('url') ?? ''),
      description: String(data.get('description') ?? '').trim() || null,
      enabled_events: eventList(String(data.get('enabled_events') ?? '')),
    };
    setSending(true);
    setProblem(undefined);
    try {
      await api(`/api/webhook_endpoints/${encodeURIComponent(endpoint.id)}/`, { method: 'POST', body });
      onSaved();
    } catch (error) {
      setProblem(error instanceof Error ? error : new Error(String(error)));
    } finally {
      setSending(false);
    }
  };
  const fields = problem instanceof ProblemError ? Object.fromEntries(problem.errors.map((error) => [error.param, error.detail])) : {};
  return (
    <form class="endpoint-form" onSubmit={submit} aria-labelledby="edit-title">
      <h2 id="edit-title">Edit</h2>
      <Field id="edit-url" label="URL" error={fields.url}>
        <input name="url" type="url" required defaultValue={endpoint.url} autocomplete="off" />
      </Field>
      <Field id="edit-description" label="Description" error={fields.description}>
        <input name="description" type="text" defaultValue={endpoint.description ?? ''} autocomplete="off" />
      </Field>
      <Field id="edit-events" label="Events" error={fields.enabled_events} hint="Types or prefixes, separated by commas; * for all.">
        <input name="enabled_events" type="text" defaultValue={endpoint.enabled_events.join(', ')} autocomplete="off" />
      </Field>
      <div class="actions">
        <button type="submit" disabled={sending}>
          Save
        </button>
      </div>
      <ProblemAlert error={problem} />
    </form>
  );
}
