import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { createApiKey, revokeActiveApiKeys } from '../../auth/api-keys.js';
import { loadConfig } from '../../config.js';
import { importJsonl } from '../../import/index.js';
import { RECORD_KINDS } from '../../import/record-kinds.js';
import { createOrganization, findOrganization } from '../../organizations/organizations.js';
import { closeOnSignals, serverStoreOptions, startServer, type RunningServer } from '../../server.js';
import { migrate } from '../../store/migrate.js';
import { openStore } from '../../store/open-store.js';
import type { Store } from '../../store/store.js';
import { operatorPortalLink, type OperatorPortalLink } from '../../portal/cli-portal-link.js';
import { DEMO_ORG_NAME, DEMO_ORG_UID, demoLines } from '../demo-data.js';
import { print, type OutputOptions } from '../output.js';
import { publishAfterWrite } from '../publish-after-write.js';
import { assertPortFree, listenErrorMessage } from '../port-check.js';
import { compileForQuickStart } from '../quick-start.js';
import { tuneHeapForServing } from '../serving-heap.js';
import { terminalLogDestination } from '../terminal-log.js';
import { configFromFlags, listeningLine, type ServeFlags } from './serve.js';

interface DemoResult {
  org: string;
  /** A read key: lists and lookups. */
  key_id: string;
  key: string;
  /** A write-scoped key: drawdowns and repayments over HTTP. */
  write_key_id: string;
  write_key: string;
  /** A webhooks-scoped key: webhook endpoints and resending events. */
  webhooks_key_id: string;
  webhooks_key: string;
  /** The demo organization's keys that worked until this run (earlier runs' keys): revoked now. */
  revoked_key_ids: string[];
  /** Records loaded per collection, keyed by table (`entities`, `payment_methods`, `credit_limits`, `loans`, …). */
  [table: string]: string | number | string[];
}

/** The limit the printed drawdown line draws on: its balance covers hundreds of runs of it. */
export const DEMO_DRAW_LIMIT = 'cl_demo_01_usd';
export const DEMO_DRAW_AMOUNT = '100.00';

/**
 * Creates (or reuses) the demo organization, loads its sample data and mints
 * a fresh read key, write key and webhooks key; every other key of the demo
 * organization (those earlier runs printed) is revoked, so only the three
 * printed last work.
 */
export async function setUpDemo(store: Store): Promise<DemoResult> {
  const org = (await findOrganization(store, DEMO_ORG_UID)) ?? (await createOrganization(store, DEMO_ORG_NAME, DEMO_ORG_UID));
  const lines = demoLines();
  // Through the import path, so the demo is exactly what an import produces.
  await importJsonl(store, org.uid, Readable.from(lines.map((line) => `${JSON.stringify(line)}\n`)));
  // Listed at once, with or without a serve node (demo --serve's own publisher would get to them too).
  await publishAfterWrite(store, org.uid);
  const revoked = await revokeActiveApiKeys(store, org.uid);
  const key = await createApiKey(store, org.uid);
  const writeKey = await createApiKey(store, org.uid, undefined, 'write');
  const webhooksKey = await createApiKey(store, org.uid, undefined, 'webhooks');
  return {
    org: org.uid,
    key_id: key.id,
    key: key.key,
    write_key_id: writeKey.id,
    write_key: writeKey.key,
    webhooks_key_id: webhooksKey.id,
    webhooks_key: webhooksKey.key,
    revoked_key_ids: revoked,
    ...Object.fromEntries(RECORD_KINDS.kinds.map((kind) => [kind.table, lines.filter((line) => line.object === kind.object).length])),
  };
}

/** A one-time portal link for the demo's write key (the pages a loan is prepared on; --key names another). */
function demoPortalLink(store: Store, demo: DemoResult, baseUrl: string): Promise<OperatorPortalLink> {
  return operatorPortalLink(store, demo.org, baseUrl, demo.write_key_id);
}

function credentialsText(demo: DemoResult, baseUrl: string, portal: OperatorPortalLink): string {
  const limit = `${baseUrl}/api/limits/${DEMO_DRAW_LIMIT}/`;
  // A fresh key each run: sent twice, the same line is answered from the first time and draws once.
  const idempotencyKey = `demo-${randomUUID()}`;
  return [
    `demo organization: ${demo.org} (${RECORD_KINDS.kinds.map((kind) => `${demo[kind.table]} ${kind.table.replaceAll('_', ' ')}`).join(', ')})`,
    `API key:           ${demo.key}   (id ${demo.key_id}; read; shown once)`,
    `write key:         ${demo.write_key}   (id ${demo.write_key_id}; write; shown once)`,
    `webhooks key:      ${demo.webhooks_key}   (id ${demo.webhooks_key_id}; webhooks; shown once)`,
    ...(demo.revoked_key_ids.length > 0
      ? [`revoked:           ${demo.revoked_key_ids.length} key(s) of ${demo.org} from earlier runs (${demo.revoked_key_ids.join(', ')}): only the three above work now`]
      : []),
    `portal:            ${portal.url}   (write key's session; opens once, within 10 minutes; another: npx lending-api portal --org ${demo.org} --key ${demo.webhooks_key_id})`,
    '',
    'paste this line into each shell you try the API from (the examples in README.md and docs/ use $ORG, $R, $W and $H):',
    `  ${exportLine(demo)}`,
    '',
    'try:',
    `  curl -u '${demo.org}:${demo.key}' '${baseUrl}/api/methods/?currency=usd'`,
    `  curl -u '${demo.org}:${demo.key}' '${baseUrl}/api/limits/?entity=ent_demo_01'`,
    `  curl -u '${demo.org}:${demo.key}' '${baseUrl}/api/entities/?country=gb'`,
    `  curl -u '${demo.org}:${demo.key}' '${baseUrl}/api/loans/?status=active'`,
    '',
    `record a drawdown of ${DEMO_DRAW_AMOUNT} (sent again, the same line is answered from the first time: it draws once), then see the balance move:`,
    `  curl -X POST -u '${demo.org}:${demo.write_key}' '${limit}drawdowns/' -H 'Idempotency-Key: ${idempotencyKey}' -H 'Content-Type: application/json' -d '{"amount":"${DEMO_DRAW_AMOUNT}"}'`,
    `  curl -u '${demo.org}:${demo.key}' '${limit}'`,
    '',
    'see the events of that limit, and forward new ones to a local receiver as webhooks would (docs/webhooks.md):',
    `  curl -u '${demo.org}:${demo.key}' '${baseUrl}/api/events/?object=${DEMO_DRAW_LIMIT}'`,
    `  npx lending-api webhooks listen --forward-to http://localhost:4000/hooks --api-url ${baseUrl} --org ${demo.org} --key '${demo.key}'`,
  ].join('\n');
}

/** The shell line that sets the names the docs' examples use: the organization, the read, write and webhooks keys. */
function exportLine(demo: Pick<DemoResult, 'org' | 'key' | 'write_key' | 'webhooks_key'>): string {
  return `export ORG=${demo.org} R='${demo.key}' W='${demo.write_key}' H='${demo.webhooks_key}'`;
}

/** `demo`: sets up the demo organization and prints its credentials; with `--serve`, serves it. */
export async function runDemo(flags: ServeFlags & { serve?: boolean }): Promise<void> {
  if (flags.serve) await serveDemo(flags);
  else await printDemo(flags);
}

async function printDemo(flags: OutputOptions): Promise<void> {
  const config = loadConfig();
  compileForQuickStart();
  const store = await openStore(config.store, { poolSize: 2, lockWaitMs: config.pgliteLockTimeoutMs, pgliteSharedBuffers: config.pgliteSharedBuffers });
  try {
    if (store.kind === 'pglite') await migrate(store);
    const demo = await setUpDemo(store);
    const baseUrl = config.publicUrl ?? `http://${config.host}:${config.port}`;
    const portal = await demoPortalLink(store, demo, baseUrl);
    print(flags, { ...demo, portal_url: portal.url, portal_expires_at: portal.expires_at }, credentialsText(demo, baseUrl, portal));
  } finally {
    await store.close();
  }
}

/**
 * The port is tried before the store is opened, and the server listens before
 * the demo touches the keys: on a taken port the demo changes nothing, and the
 * keys an earlier run printed keep working.
 */
async function serveDemo(flags: ServeFlags): Promise<void> {
  const config = configFromFlags(flags);
  await assertPortFree(config.host, config.port);
  tuneHeapForServing();
  // The store is the server's: its pool size and timeouts.
  const store = await openStore(config.store, serverStoreOptions(config));
  let server: RunningServer;
  try {
    server = await startServer(config, store, terminalLogDestination(flags));
  } catch (error) {
    await store.close();
    throw listenErrorMessage(error, config.host, config.port);
  }
  try {
    const demo = await setUpDemo(store);
    const portal = await demoPortalLink(store, demo, config.publicUrl ?? server.url);
    print(
      flags,
      { ...demo, url: server.url, metrics: server.metricsUrl ?? null, portal_url: portal.url, portal_expires_at: portal.expires_at },
      `${listeningLine(server)}\n\n${credentialsText(demo, server.url, portal)}`,
    );
  } catch (error) {
    await server.close();
    throw error;
  }
  closeOnSignals(server, (message) => process.stderr.write(`lending-api: ${message}\n`));
}
