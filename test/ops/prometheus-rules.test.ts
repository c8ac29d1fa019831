import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { headingAnchors } from './markdown-anchors.js';
import { describeWithPromtool, runPromtool } from './promtool.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RULES_DIR = path.join(ROOT, 'ops/prometheus');
const RULES = path.join(RULES_DIR, 'lending-api.rules.yml');
const UNIT_TESTS = path.join(RULES_DIR, 'tests/alerts.test.yml');
const RUNBOOK_BASE = 'https://lending-api.dev/docs/operations.md#';

/** Each alert of the rules file, with its runbook_url (the file is ours: one `- alert:` per rule, its annotations below it). */
async function alerts(): Promise<{ name: string; runbookUrl: string | undefined }[]> {
  const text = await readFile(RULES, 'utf8');
  return text
    .split(/^ *- alert: /m)
    .slice(1)
    .map((rule) => ({ name: rule.split('\n')[0]?.trim() ?? '', runbookUrl: /^ +runbook_url: (\S+)$/m.exec(rule)?.[1] }));
}

describeWithPromtool('the shipped Prometheus rules (ops/prometheus)', (promtool) => {
  it('pass promtool check rules, its linter included', async () => {
    const check = await runPromtool(promtool, ['check', 'rules', '--lint=all', '--lint-fatal', RULES]);
    expect(check.code, `${check.stdout}${check.stderr}`).toBe(0);
    expect(check.stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('pass their promtool unit tests', async () => {
    const run = await runPromtool(promtool, ['test', 'rules', UNIT_TESTS]);
    expect(run.code, `${run.stdout}${run.stderr}`).toBe(0);
    expect(run.stdout).toContain('SUCCESS');
  });

  it('test every alert where it must fire and where it must stay silent', async () => {
    const tests = await readFile(UNIT_TESTS, 'utf8');
    const cases = [...tests.matchAll(/alertname: (\w+)\n\s+exp_alerts:( \[\])?/g)].map((match) => ({ alert: match[1], silent: match[2] !== undefined }));
    const names = (await alerts()).map((alert) => alert.name);
    expect(names.length).toBeGreaterThanOrEqual(8);
    const untested = names.filter((name) => !cases.some((c) => c.alert === name && !c.silent) || !cases.some((c) => c.alert === name && c.silent));
    expect(untested).toEqual([]);
  });
});

it("links every alert to its runbook section, which docs/operations.md has", async () => {
  const anchors = headingAnchors(await readFile(path.join(ROOT, 'docs/operations.md'), 'utf8'));
  const broken = (await alerts()).filter(({ runbookUrl }) => !runbookUrl?.startsWith(RUNBOOK_BASE) || !anchors.has(runbookUrl.slice(RUNBOOK_BASE.length)));
  expect(broken).toEqual([]);
});
