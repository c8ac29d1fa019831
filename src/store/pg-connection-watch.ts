import type pg from 'pg';

/**
 * Hears a checked-out client's connection dying. A client reports it (FATAL
 * from a shutdown or a terminated backend, a closed socket) as an 'error'
 * event, also between two statements when no query is there to fail:
 * unheard, that event crashes the process. Heard, it fails the transaction
 * at its next statement.
 */
export class ConnectionWatch {
  lost: Error | undefined;
  private readonly onError = (error: Error) => {
    this.lost ??= error;
  };

  attach(client: pg.PoolClient): void {
    client.on('error', this.onError);
  }

  /** After the client's release: the pool listens to it again from then on. */
  detach(client: pg.PoolClient): void {
    client.off('error', this.onError);
  }
}
