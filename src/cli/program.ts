import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { KEY_SCOPES } from '../auth/key-scope.js';

/**
 * The command line's grammar: every command, its options and its help text.
 * A command's work lives in `commands/`, loaded by `import()` only when that
 * command runs, so `--help`, `--version` and a usage error load commander and
 * this file, never the server, the database drivers or the resource
 * definitions (test/cli/help-loads-little.test.ts holds this).
 */
export function buildProgram(): Command {
  const program = new Command('lending-api')
    .description('Payment methods and credit limits for lenders. Reads DATABASE_URL (default pglite://./data).')
    .version(packageVersion(), '-V, --version', 'print the version')
    .showHelpAfterError()
    .exitOverride();

  addServeFlags(program.command('serve').description('run the HTTP service')).action(async (flags) => (await import('./commands/serve.js')).runServe(flags));

  program
    .command('deliver')
    .description('deliver webhooks only, serving no API: beside `serve --deliver off` nodes, so API nodes and delivery workers scale apart')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (LOG_LEVEL)')
    .option('--webhook-allow-private', 'let webhook endpoints use http:// and private addresses, for tests and internal networks (WEBHOOK_ALLOW_PRIVATE)')
    .option('--json', 'machine-readable start-up line')
    .action(async (flags) => (await import('./commands/deliver.js')).runDeliver(flags));

  program
    .command('migrate')
    .description('bring the database schema up to date')
    .option('--json', 'machine-readable output')
    .action(async (flags) => (await import('./commands/migrate.js')).runMigrate(flags));

  program
    .command('distribute')
    .description('apply the sharding plan on a Citus coordinator: reference tables, then every other table distributed by org_id (idempotent)')
    .option('--json', 'machine-readable output')
    .action(async (flags) => (await import('./commands/distribute.js')).runDistribute(flags));

  const org = program.command('org').description('manage organizations');
  org
    .command('create')
    .description('create an organization')
    .requiredOption('--name <name>', 'display name')
    .option('--uid <uid>', 'organization ID (default: generated org_…)')
    .option('--json', 'machine-readable output')
    .action(async (flags) => (await import('./commands/org.js')).runOrgCreate(flags));
  org
    .command('list')
    .description('list organizations with their number of active API keys')
    .option('--json', 'machine-readable output')
    .action(async (flags) => (await import('./commands/org.js')).runOrgList(flags));

  const key = program.command('key').description('manage API keys (several may be active at once, for rotation)');
  key
    .command('create')
    .description('create an API key; it is printed once and never stored')
    .requiredOption('--org <org>', 'organization ID')
    .option('--expires <at>', 'expiry: an ISO 8601 timestamp or a date (that day 00:00 UTC)')
    .option('--scope <scope>', `${KEY_SCOPES.join(', ')}: every key reads; a write key may also record drawdowns, repayments and loans over HTTP, a webhooks key manage webhook endpoints`, 'read')
    .option('--json', 'machine-readable output')
    .action(async (flags) => (await import('./commands/key.js')).runKeyCreate(flags));
  key
    .command('list')
    .description("list an organization's keys (ids and status, never the keys)")
    .requiredOption('--org <org>', 'organization ID')
    .option('--json', 'machine-readable output')
    .action(async (flags) => (await import('./commands/key.js')).runKeyList(flags));
  key
    .command('revoke')
    .description('revoke an API key (refused everywhere within AUTH_CACHE_TTL_MS, 5 s by default)')
    .argument('<id>', 'key id (key_…)')
    .option('--json', 'machine-readable output')
    .action(async (id: string, flags) => (await import('./commands/key.js')).runKeyRevoke(id, flags));

  program
    .command('portal')
    .description("print a one-time link into an organization's portal (valid 10 minutes, opens one session of at most an hour)")
    .requiredOption('--org <org>', 'organization ID')
    .option('--key <id>', "the key id (key_…) whose scope the session has (default: the organization's newest active read key)")
    .option('--url <url>', 'where the service is reached, for the link (default: PUBLIC_URL, else http://HOST:PORT)')
    .option('--json', 'machine-readable output')
    .action(async (flags) => (await import('./commands/portal.js')).runPortal(flags));

  program
    .command('import')
    .description('load a JSON Lines file of records (payment methods, credit limits, entities, …), drawdowns and repayments; atomic: one invalid line and nothing is written')
    .argument('<file>', "JSON Lines file, or '-' for standard input")
    .requiredOption('--org <org>', 'organization ID')
    .option('--max-errors <n>', 'how many invalid lines to list (the rest are counted)', '100')
    .option('--metrics-file <path>', "keep the import's progress in this file in Prometheus' text format (node_exporter's textfile collector)")
    .option('--json', 'machine-readable output')
    .action(async (file: string, flags) => (await import('./commands/import.js')).runImport(file, flags));

  addLedgerCommand(program, 'draw', 'draw down a credit limit (refused, changing nothing, if the amount exceeds its balance)');
  addLedgerCommand(program, 'repay', 'record a repayment (refused, changing nothing, if the amount exceeds the outstanding amount)');

  addServeFlags(
    program
      .command('demo')
      .description('create a demo organization with sample data and print its credentials')
      .option('--serve', 'then run the HTTP service (in this process, so the embedded store stays locked to it)'),
  ).action(async (flags) => (await import('./commands/demo.js')).runDemo(flags));

  const webhooks = program.command('webhooks').description("the organization's webhook endpoints, over the API of a running server, and forwarding while developing");
  const overApi = (command: Command) =>
    command
      .requiredOption('--org <org>', 'organization ID')
      .option('--key <key>', 'a webhooks-scoped API key of the organization (default: LENDING_API_KEY)')
      .option('--api-url <url>', 'the running server', 'http://127.0.0.1:3000')
      .option('--json', 'machine-readable output');
  overApi(webhooks.command('endpoints').description("list the organization's webhook endpoints with their health (GET /api/webhook_endpoints/)")).action(async (flags) =>
    (await import('./commands/webhooks-manage.js')).runWebhooksEndpoints(flags),
  );
  overApi(
    webhooks
      .command('resend <event>')
      .description('send an event again now, to every endpoint that takes it or to --endpoint; one already waiting is not queued twice')
      .option('--endpoint <id>', 'only this endpoint (we_…)'),
  ).action(async (event: string, flags) => (await import('./commands/webhooks-manage.js')).runWebhooksResend(event, flags));
  overApi(
    webhooks
      .command('replay <endpoint>')
      .description('send again every event whose last attempt to the endpoint failed between --since and --until')
      .requiredOption('--since <time>', 'ISO 8601 time or date: attempts at or after it')
      .option('--until <time>', 'ISO 8601 time or date: attempts at or before it (default: now)'),
  ).action(async (endpoint: string, flags) => (await import('./commands/webhooks-manage.js')).runWebhooksReplay(endpoint, flags));
  overApi(webhooks.command('test <endpoint>').description('send the endpoint a signed webhook_endpoint.test delivery and print what it answered (exit 1 unless 2xx)')).action(
    async (endpoint: string, flags) => (await import('./commands/webhooks-manage.js')).runWebhooksTest(endpoint, flags),
  );

  webhooks
    .command('listen')
    .description("forward the organization's new events, signed as a webhook endpoint receives them, to a local URL (like stripe listen); reads GET /api/events/ of a running server")
    .requiredOption('--forward-to <url>', 'where to POST each event, e.g. http://localhost:4242/webhooks')
    .requiredOption('--org <org>', 'organization ID')
    .option('--key <key>', 'an API key of the organization (default: LENDING_API_KEY)')
    .option('--api-url <url>', 'the running server', 'http://127.0.0.1:3000')
    .option('--since <time>', 'forward the events logged since this ISO 8601 time too (default: only those logged from now on)')
    .option('--secret <whsec>', 'the signing secret (default: a new one, printed at start)')
    .option('--interval <ms>', 'how often to poll the events log', '1000')
    .option('--json', 'one JSON line per event (and for the start)')
    .action(async (flags) => (await import('./commands/webhooks-listen.js')).runWebhooksListen(flags));

  program
    .command('idempotency')
    .description("stored responses of HTTP writes' Idempotency-Keys")
    .command('prune')
    .description('delete expired stored responses (serve also does this every IDEMPOTENCY_PRUNE_INTERVAL_MS)')
    .option('--json', 'machine-readable output')
    .action(async (flags) => (await import('./commands/idempotency.js')).runIdempotencyPrune(flags));

  return program;
}

/** The options of `serve`, which `demo --serve` takes too. */
function addServeFlags(command: Command): Command {
  return command
    .option('--port <port>', 'port to listen on (PORT, default 3000)')
    .option('--host <host>', 'address to bind (HOST, default 127.0.0.1)')
    .option('--public-url <url>', 'base URL for links (PUBLIC_URL)')
    .option('--trust-proxy [hops|addresses]', 'believe X-Forwarded-* from a hop count (bare flag: 1) or from these proxy addresses/CIDRs (TRUST_PROXY)')
    .option('--rate-limit <n>', 'requests per minute per API key, 0 = off (RATE_LIMIT_PER_MINUTE)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (LOG_LEVEL)')
    .option('--workers <n>', 'HTTP worker processes sharing the port; PostgreSQL only (WORKERS, default 1)')
    .option('--webhook-allow-private', 'let webhook endpoints use http:// and private addresses, for tests and internal networks (WEBHOOK_ALLOW_PRIVATE)')
    .option('--deliver <on|off>', 'off: serve the API and publish events, deliver no webhook (run `lending-api deliver` for that) (WEBHOOK_DELIVERY, default on)')
    .option('--json', 'machine-readable start-up line');
}

/** `draw` and `repay`: one ledger entry against a credit limit. */
function addLedgerCommand(program: Command, name: 'draw' | 'repay', description: string): void {
  program
    .command(name)
    .description(description)
    .requiredOption('--org <org>', 'organization ID')
    .requiredOption('--limit <uid>', 'credit limit uid')
    .requiredOption('--amount <n>', 'positive amount, at most two decimal places')
    .option('--id <id>', 'idempotency key: the same id with the same content is a no-op (default: generated)')
    .option('--at <time>', "time of the entry, an ISO 8601 timestamp, now or earlier (default: now); the limit's updated_at becomes the time of the write")
    .option('--json', 'machine-readable output')
    .action(async (flags) => (await import('./commands/ledger-command.js')).runLedgerCommand(name === 'draw' ? 'drawdown' : 'repayment', flags));
}

/** The version in package.json (two levels up from src/cli/ and from dist/cli/ alike). */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}
