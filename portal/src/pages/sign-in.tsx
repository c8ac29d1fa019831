/** Without a session: how to get a fresh link (the portal has no accounts of its own). */
export function SignIn({ reason }: { reason?: string | undefined }) {
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">Open a fresh portal link</h1>
      {reason ? (
        <div role="alert" class="alert">
          {reason}
        </div>
      ) : null}
      <p>The portal opens from a one-time link, valid 10 minutes, that gives a session of at most an hour. To get one:</p>
      <ul>
        <li>
          on the server: <code>lending-api portal --org ORG</code>
        </li>
        <li>
          with an API key: <code>POST /api/portal_sessions/</code> (<code>curl -u "$ORG:$KEY" -X POST …/api/portal_sessions/</code>), then open the{' '}
          <code>url</code> it answers.
        </li>
      </ul>
      <p>A link works once: open a new one rather than reusing or sharing it.</p>
    </section>
  );
}
