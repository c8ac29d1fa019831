/**
 * While the database does not answer, a process keeps one connection
 * attempt in flight, not one per waiting query. A frozen server (SIGSTOP, a
 * hung host) accepts connections into its listen queue without answering;
 * each attempt the client abandons at its connect timeout stays queued there,
 * and once the server resumes it must serve every one of them before a new
 * connection — a pool retrying every slot meanwhile left a hundred abandoned
 * attempts ahead of the first request after SIGCONT, which then timed out too
 * (503) although the database was back.
 *
 * Connecting is free while attempts succeed. After one fails, the next
 * attempt goes alone; attempts that come meanwhile wait for its outcome and
 * share its failure, or connect themselves once it has succeeded.
 */
export class ConnectGate {
  private failing = false;
  private attempt: Promise<Error | undefined> | undefined;

  /** Runs `connect` (which calls back once with its error, if any) when the gate lets it; `done` gets the outcome. */
  admit(connect: (finished: (error: Error | undefined) => void) => void, done: (error: Error | undefined) => void): void {
    if (!this.failing) {
      connect((error) => {
        if (error) this.failing = true;
        done(error);
      });
      return;
    }
    if (this.attempt) {
      this.attempt.then((error) => (error ? done(error) : this.admit(connect, done)), done);
      return;
    }
    const attempt = new Promise<Error | undefined>((resolve) => connect(resolve));
    this.attempt = attempt;
    void attempt.then((error) => {
      this.attempt = undefined;
      this.failing = error !== undefined;
      done(error);
    });
  }
}
