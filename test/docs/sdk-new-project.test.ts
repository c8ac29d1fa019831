import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

/** The text of a Markdown file from `heading` to the next heading of its level or higher. */
async function section(file: string, heading: string): Promise<string> {
  const text = await readFile(path.join(ROOT, file), 'utf8');
  const level = /^#+/.exec(heading)?.[0] ?? '';
  const rest = text.split(`\n${heading}\n`)[1];
  if (rest === undefined) throw new Error(`${file} has no "${heading}"`);
  return rest.split(new RegExp(`\\n#{1,${level.length}} `))[0] ?? '';
}

/** The fenced blocks of `markdown` in `language`, in order. */
function blocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp('^```' + language + '\\n([\\s\\S]*?)^```', 'gm'))].map((match) => match[1] ?? '');
}

/**
 * The docs' commands for a new project, with the two installs that would need the registry done from this
 * checkout: the SDK from packages/client (a file: dependency), TypeScript and @types/node linked from its node_modules.
 */
function offline(commands: string): string {
  return commands
    .split('\n')
    .map((line) => {
      if (/^npm install \/path\/to\/\S+\.tgz/.test(line)) return `npm install --offline --no-audit --no-fund ${path.join(ROOT, 'packages/client')}`;
      if (line.startsWith('npm install --save-dev typescript @types/node')) {
        return [
          'mkdir -p node_modules/@types node_modules/.bin',
          `ln -s ${path.join(ROOT, 'node_modules/typescript')} node_modules/typescript`,
          `ln -s ${path.join(ROOT, 'node_modules/@types/node')} node_modules/@types/node`,
          'ln -s ../typescript/bin/tsc node_modules/.bin/tsc',
        ].join(' && ');
      }
      if (/^npm install/.test(line)) throw new Error(`an install the test cannot do offline: ${line}`);
      return line;
    })
    .join('\n');
}

/** The walk of webhooks.md, with what its comment says the program keeps (lastSeen) and does (handle). */
const WALK_PREAMBLE = `import { LendingClient, type Event } from 'lending-api-client';
declare const client: LendingClient;
declare let lastSeen: Pick<Event, 'id' | 'created_at'> | undefined;
declare function handle(event: Event): Promise<void>;
`;

async function typeCheck(dir: string, extraArgs: readonly string[] = []): Promise<{ code: number; output: string }> {
  return run(process.execPath, [TSC, '-p', 'tsconfig.json', '--noEmit', ...extraArgs], { cwd: dir }).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (error: { code?: number; stdout?: string }) => ({ code: error.code ?? 1, output: error.stdout ?? String(error) }),
  );
}

// TypeScript 6's `tsc --init` has module nodenext, types [], exactOptionalPropertyTypes and
// noUncheckedIndexedAccess: docs/sdk.md's snippets did not say what such a project needs, and the log walk
// passed `created_from: lastSeen?.created_at`, which is not a string under exactOptionalPropertyTypes.
describe('docs/sdk.md "A new TypeScript project": its commands, then the docs\' snippets type-checked in it', () => {
  let scratch = '';
  let project = '';

  beforeAll(async () => {
    // The project installs the workspace package as built (its dist/ and .d.ts files).
    await run(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT });
    scratch = await mkdtemp(path.join(tmpdir(), 'lending-sdk-project-'));
    const newProject = await section('docs/sdk.md', '### A new TypeScript project');
    const [commands] = blocks(newProject, 'sh');
    const [program] = blocks(newProject, 'ts');
    const [usingIt] = blocks(await section('docs/sdk.md', '### Using it'), 'ts');
    const [walk] = blocks(await section('docs/webhooks.md', '### Walking the log without missing anything'), 'ts');
    // As in a fresh shell: run under `npm test`, npm's own variables (npm_config_local_prefix: this checkout) would follow.
    const shell = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
    await run('sh', ['-e', '-c', offline(commands ?? '')], { cwd: scratch, env: shell });
    // The directory the commands made and went into.
    project = path.join(scratch, /^mkdir (\S+)/.exec(commands ?? '')?.[1] ?? '');
    await writeFile(path.join(project, 'index.ts'), program ?? '');
    await writeFile(path.join(project, 'using-it.ts'), usingIt ?? '');
    await writeFile(path.join(project, 'walk.ts'), WALK_PREAMBLE + (walk ?? ''));
  }, 600_000);
  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('makes an ES module project whose tsconfig is TypeScript\'s own, with node\'s types and exactOptionalPropertyTypes', async () => {
    expect(JSON.parse(await readFile(path.join(project, 'package.json'), 'utf8'))).toMatchObject({ type: 'module' });
    const tsconfig = await readFile(path.join(project, 'tsconfig.json'), 'utf8');
    expect(tsconfig).toMatch(/^\s*"types": \["node"\],$/m);
    expect(tsconfig).toMatch(/^\s*"exactOptionalPropertyTypes": true,$/m);
    expect(tsconfig).toMatch(/^\s*"noUncheckedIndexedAccess": true,$/m);
  });

  it('type-checks the new project\'s program, Using it\'s snippet and webhooks.md\'s log walk', async () => {
    const check = await typeCheck(project, ['--exactOptionalPropertyTypes', '--noUncheckedIndexedAccess']);
    expect(check.output).toBe('');
    expect(check.code).toBe(0);
  }, 120_000);

  it('needs both settings the docs add: without node\'s types, or as CommonJS, the snippets do not type-check', async () => {
    await writeFile(path.join(project, 'tsconfig.no-types.json'), JSON.stringify({ extends: './tsconfig.json', compilerOptions: { types: [] } }));
    const noTypes = await run(process.execPath, [TSC, '-p', 'tsconfig.no-types.json', '--noEmit'], { cwd: project }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? '',
    );
    expect(noTypes).toMatch(/Cannot find name 'process'/);

    const manifest = path.join(project, 'package.json');
    const asModule = await readFile(manifest, 'utf8');
    await writeFile(manifest, JSON.stringify({ ...(JSON.parse(asModule) as object), type: 'commonjs' }));
    try {
      const asCommonJs = await typeCheck(project);
      expect(asCommonJs.output).toMatch(/The current file is a CommonJS module and cannot use 'await' at the top level/);
    } finally {
      await writeFile(manifest, asModule);
    }
  }, 120_000);
});
