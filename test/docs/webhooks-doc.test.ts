import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RETRY_SCHEDULE } from '../../src/webhooks/retry-schedule.js';
import { newSigningSecret, signPayload } from '../../src/webhooks/signature.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const doc = () => readFile(path.join(ROOT, 'docs/webhooks.md'), 'utf8');

/** The fenced blocks of `markdown` in `language`, in order. */
function blocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp('^```' + language + '\\n([\\s\\S]*?)^```', 'gm'))].map((match) => match[1]!);
}

/** A duration as the doc writes it: seconds under a minute, minutes and seconds under an hour, then hours and minutes. */
function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min${seconds % 60 ? ` ${seconds % 60} s` : ''}`;
  const minutes = Math.round(seconds / 60);
  return `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
}

/** The rows the retry table must have, from RETRY_SCHEDULE. */
function scheduleRows(): string[] {
  return RETRY_SCHEDULE.map((row) => `| ${row.attempt} | ${duration(row.delayMs)} | ${duration(row.nominalMs)} | ${duration(row.earliestMs)} – ${duration(row.latestMs)} |`);
}

/** A delivery the service's signer makes: the headers a receiver gets. */
function delivery(options: { secrets: string[]; timestamp?: number; body?: string }) {
  const body = options.body ?? JSON.stringify({ id: 'evt_doc_1', object: 'event', type: 'loan.repaid', data: { object: { uid: 'ln_1', reference: 'Zoë ✓' } } });
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  return {
    body,
    headers: { 'webhook-id': 'evt_doc_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signPayload({ id: 'evt_doc_1', timestamp, body }, options.secrets) },
  };
}

describe('docs/webhooks.md', () => {
  it('shows the retry schedule of src/webhooks/retry-schedule.ts, row for row', async () => {
    const text = await doc();
    const table = text.split('### Retries')[1]!.split('\n## ')[0]!;
    const rows = table.split('\n').filter((line) => /^\| \d+ \|/.test(line));
    expect(rows, `paste these rows into the Retries table of docs/webhooks.md:\n${scheduleRows().join('\n')}`).toEqual(scheduleRows());
    expect(RETRY_SCHEDULE.at(-1)!.earliestMs).toBeGreaterThan(72 * 3600 * 1000);
    expect(table).toContain(`After attempt ${RETRY_SCHEDULE.at(-1)!.attempt} the delivery is given up`);
  });

  it('lists every event type the migrations track, and no other', async () => {
    const migrations = path.join(ROOT, 'src/store/migrations');
    const { readdir } = await import('node:fs/promises');
    const sql = (await Promise.all((await readdir(migrations)).filter((name) => name.endsWith('.sql')).map((name) => readFile(path.join(migrations, name), 'utf8')))).join('\n');
    const tracked = [...sql.matchAll(/^SELECT events_track\('[^']+', '([^']+)',[^;]*?(?:\}', '([a-z_]+)')?\);/gms)].flatMap(([, object, ownStatus]) => [
      `${object}.created`,
      `${object}.updated`,
      ...(ownStatus ? [`${object}.${ownStatus}`] : []),
    ]);
    // A ledger entry is never changed: its table has the update trigger but no update ever reaches it.
    const expected = tracked.filter((type) => type !== 'ledger_entry.updated').sort();
    expect(expected.length).toBeGreaterThanOrEqual(10);
    const typesTable = (await doc()).split('### Types')[1]!.split('\n### ')[0]!;
    const documented = [...typesTable.matchAll(/^\| (.+?) \|/gm)].flatMap(([, cell]) => [...cell!.matchAll(/`([a-z_]+\.[a-z_]+)`/g)].map((match) => match[1]!));
    // Each object the table names has all its types there, and no other; a collection added later is the generic row's.
    const objects = new Set(documented.map((type) => type.split('.')[0]));
    expect(documented.sort()).toEqual(expected.filter((type) => objects.has(type.split('.')[0])));
    expect(objects.size).toBeGreaterThanOrEqual(5);
    expect(typesTable).toContain('| *object*`.created`, *object*`.updated` |');
  });

  it('is linked from README.md and docs/architecture.md', async () => {
    expect(await readFile(path.join(ROOT, 'README.md'), 'utf8')).toMatch(/^- \[docs\/webhooks\.md\]\(docs\/webhooks\.md\) — /m);
    expect(await readFile(path.join(ROOT, 'docs/architecture.md'), 'utf8')).toContain('(webhooks.md)');
  });
});

describe('docs/webhooks.md: the node:crypto snippet verifies what the service signs', () => {
  let scratch = '';
  let verify: (body: string, headers: Record<string, string>, secret: string) => unknown;

  beforeAll(async () => {
    const [snippet] = blocks(await doc(), 'js');
    scratch = await mkdtemp(path.join(tmpdir(), 'webhooks-doc-'));
    await writeFile(path.join(scratch, 'verify.mjs'), snippet!);
    ({ verifyLendingWebhook: verify } = (await import(pathToFileURL(path.join(scratch, 'verify.mjs')).href)) as { verifyLendingWebhook: typeof verify });
  });
  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('accepts a delivery, with either secret during a rotation, and refuses a changed body, an old one and another secret', () => {
    const [secret, previous] = [newSigningSecret(), newSigningSecret()];
    const { body, headers } = delivery({ secrets: [secret, previous] });
    expect(verify(body, headers, secret)).toMatchObject({ id: 'evt_doc_1', data: { object: { reference: 'Zoë ✓' } } });
    expect(verify(body, headers, previous)).toMatchObject({ id: 'evt_doc_1' });
    expect(() => verify(body.replace('ln_1', 'ln_2'), headers, secret)).toThrow('no webhook-signature matches');
    expect(() => verify(body, headers, newSigningSecret())).toThrow('no webhook-signature matches');
    const old = delivery({ secrets: [secret], timestamp: Math.floor(Date.now() / 1000) - 600 });
    expect(() => verify(old.body, old.headers, secret)).toThrow('too far from now');
  });
});

const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
const pythonMissing = python.status !== 0;
if (pythonMissing) console.warn('\n⚠ SKIPPING the Python snippet of docs/webhooks.md: python3 is not installed (apt-get install -y python3)\n');

describe.skipIf(pythonMissing)('docs/webhooks.md: the Python snippet verifies what the service signs (python3, standard library)', () => {
  /** Runs the doc's snippet on each case: `{ ok: event }` or `{ error: message }`. */
  async function runSnippet(cases: { body: string; headers: Record<string, string>; secret: string }[]): Promise<({ ok: unknown } | { error: string })[]> {
    const [snippet] = blocks(await doc(), 'python');
    const harness = `${snippet}
import sys
results = []
for case in json.load(sys.stdin):
    try:
        results.append({"ok": verify_lending_webhook(case["body"].encode("utf-8"), case["headers"], case["secret"])})
    except ValueError as error:
        results.append({"error": str(error)})
print(json.dumps(results))
`;
    return new Promise((resolve, reject) => {
      const child = execFile('python3', ['-I', '-c', harness], (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout))));
      child.stdin!.end(JSON.stringify(cases));
    });
  }

  it('accepts a delivery, with either secret during a rotation and any header case, and refuses a changed body, an old one, another secret and a missing header', async () => {
    const [secret, previous] = [newSigningSecret(), newSigningSecret()];
    const { body, headers } = delivery({ secrets: [secret, previous] });
    const shouted = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toUpperCase(), value]));
    const old = delivery({ secrets: [secret], timestamp: Math.floor(Date.now() / 1000) - 600 });
    const { 'webhook-signature': _, ...unsigned } = headers;
    const results = await runSnippet([
      { body, headers, secret },
      { body, headers: shouted, secret: previous },
      { body: body.replace('ln_1', 'ln_2'), headers, secret },
      { body, headers, secret: newSigningSecret() },
      { body: old.body, headers: old.headers, secret },
      { body, headers: unsigned, secret },
    ]);
    expect(results).toEqual([
      { ok: JSON.parse(body) },
      { ok: JSON.parse(body) },
      { error: 'no webhook-signature matches' },
      { error: 'no webhook-signature matches' },
      { error: 'webhook-timestamp is too far from now' },
      { error: 'a webhook-* header is missing' },
    ]);
  }, 60_000);
});
