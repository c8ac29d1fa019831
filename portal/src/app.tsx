import { Component, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Layout } from './components/layout';
import { ProblemAlert } from './components/status';
import { api, onSessionRefused, setApiSession } from './lib/api';
import { useLocation } from './lib/router';
import { exchangeToken, forgetSession, hasScope, keepSession, ProblemError, storedSession, takeTokenFromLocation, type Session } from './lib/session';
import { Routes } from './routes';
import { ContinueToPortal } from './pages/continue';
import { SignIn } from './pages/sign-in';

type State = { kind: 'link' } | { kind: 'exchanging' } | { kind: 'signed-in'; session: Session } | { kind: 'signed-out'; reason?: string };

/**
 * Reads the link's token once and removes it from the address before the first render; it is exchanged only
 * when the person presses Continue (a link scanner running the page would otherwise use up the link).
 */
const tokenInLink = takeTokenFromLocation();

export function App() {
  const [state, setState] = useState<State>(() => {
    if (tokenInLink) return { kind: 'link' };
    const session = storedSession();
    return session ? { kind: 'signed-in', session } : { kind: 'signed-out' };
  });
  const exchange = () => {
    if (!tokenInLink) return;
    setState({ kind: 'exchanging' });
    exchangeToken(tokenInLink).then(
      (session) => {
        keepSession(session);
        setState({ kind: 'signed-in', session });
      },
      (error: Error) => {
        forgetSession();
        setState({ kind: 'signed-out', reason: error.message });
      },
    );
  };
  useEffect(
    () =>
      onSessionRefused(() => {
        forgetSession();
        setState({ kind: 'signed-out', reason: 'Your session has ended (it expired, or the key that made its link was revoked).' });
      }),
    [],
  );
  const session = state.kind === 'signed-in' ? state.session : null;
  setApiSession(session);
  const location = useLocation();
  const signOut = () => {
    // Ends the session on the service (this node at once, the others within their auth cache's bound), then forgets it here either way.
    api('/api/portal_sessions/current/', { method: 'DELETE' }).then(
      () => signedOut('You have signed out: this session no longer works, here or anywhere it was copied.'),
      (error: unknown) =>
        signedOut(
          error instanceof ProblemError && error.status === 401
            ? 'You have signed out (the session had already ended).'
            : `You have signed out of this tab, but the service could not be told: the session itself ends at ${session?.expires_at.slice(11, 16) ?? 'its end'} UTC.`,
        ),
    );
  };
  const signedOut = (reason: string) => {
    forgetSession();
    setApiSession(null);
    setState({ kind: 'signed-out', reason });
  };
  return (
    <Layout session={session} location={location} onSignOut={signOut}>
      <ErrorBoundary>
        {state.kind === 'link' ? (
          <ContinueToPortal onContinue={exchange} />
        ) : state.kind === 'exchanging' ? (
          <p role="status" aria-live="polite">
            Signing in…
          </p>
        ) : state.kind === 'signed-out' ? (
          <SignIn reason={state.reason} />
        ) : (
          <Routes location={location} canWrite={hasScope(state.session, 'write')} canWebhooks={hasScope(state.session, 'webhooks')} />
        )}
      </ErrorBoundary>
    </Layout>
  );
}

/** A bug in a page shows a sentence and a way on, never a stack or a blank page. */
class ErrorBoundary extends Component<{ children: ComponentChildren }, { error: Error | undefined }> {
  override state = { error: undefined as Error | undefined };
  static override getDerivedStateFromError(error: unknown) {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }
  override render() {
    if (this.state.error) {
      return (
        <section aria-labelledby="page-title">
          <h1 id="page-title">Something went wrong</h1>
          <ProblemAlert error={new Error('This page could not be shown. Reload it, or open another page from the menu.')} />
        </section>
      );
    }
    return this.props.children;
  }
}
