import type { PortalSession } from './generated.js';
import { Transport, type RequestOptions } from './transport.js';
import type { Connection } from './resource-client.js';

/**
 * `/api/portal_sessions/`: one-time links into the organization's portal,
 * the service's own pages at `/portal/` (any key). Whoever opens the link
 * within 10 minutes gets a session of at most an hour with this key's
 * organization and scope; revoking the key ends it. A link works once: make
 * one per person and per visit, and hand it over as a secret.
 *
 * @example
 * const { url, expires_at } = await client.portalSessions.create();
 */
export class PortalSessionsClient {
  readonly #transport: Transport;

  constructor(connection: Connection) {
    this.#transport = connection instanceof Transport ? connection : new Transport(connection);
  }

  /** A new one-time link (`url`, valid until `expires_at`). Never sent again without an answer: each call is a new link. */
  create(options: RequestOptions = {}): Promise<PortalSession> {
    return this.#transport.postOnce<PortalSession>('/api/portal_sessions/', {}, options);
  }
}
