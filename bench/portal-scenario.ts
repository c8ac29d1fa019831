/**
 * `npm run bench -- --only portal`: the portal's weight and speed (issue 48). The bundle's JavaScript + CSS
 * gzipped (dist/portal-app/, as `npm run build` leaves it), and the time to the first interactive page on the
 * demo: `lending-api demo --serve` (the compiled entry), a fresh one-time link each round, opened in Debian's
 * Chromium; measured in the page from the click on "Continue to the portal" (the link is used only then) to the
 * credit limits table rendered with its count — the link's exchange and the first list request included.
 */
import { chromium } from 'playwright-core';
import { PORTAL_BUDGET_BYTES, portalBundleSizes } from '../scripts/portal-bundle-size.js';
import { startPortalDemo } from '../scripts/portal-demo.js';
import { writeBenchRecord, type MeasuredRow } from './results-record.js';

export const PORTAL_SCENARIO_ID = 'portal';
const ROUNDS = 7;
const TARGET_MS = 1000;
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];


export async function runPortalScenario(log: (line: string) => void): Promise<string[]> {
  const sizes = portalBundleSizes();
  const gzipped = sizes.reduce((sum, { gzipped: bytes }) => sum + bytes, 0);
  const lines = [`(portal) bundle: ${sizes.map((s) => `${s.file} ${s.gzipped} B`).join(', ')}; JavaScript + CSS ${gzipped} bytes gzipped (budget ${PORTAL_BUDGET_BYTES}) ${gzipped <= PORTAL_BUDGET_BYTES ? '✓ met' : '✗ not met'}`];
  log('(portal) starting lending-api demo --serve and Chromium');
  const { demo, stop } = await startPortalDemo();
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
  const times: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      const answer = await fetch(`${demo.url}/api/portal_sessions/`, { method: 'POST', headers: { authorization: `Basic ${Buffer.from(`${demo.org}:${demo.key}`).toString('base64')}` } });
      if (answer.status !== 201) throw new Error(`POST /api/portal_sessions/ answered ${answer.status}: ${await answer.text()}`);
      const { url } = (await answer.json()) as { url: string };
      // A fresh context: nothing cached from the round before (a first visit).
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${demo.url}/portal/${new URL(url).hash}`);
      // The link is used only when the person presses Continue: the time counts from that click.
      const proceed = page.getByRole('button', { name: 'Continue to the portal' });
      await proceed.waitFor();
      // Runs in the page (a function: the page's CSP refuses a string, which would be eval'd there).
      await page.evaluate(() => {
        const page = globalThis as unknown as { clickedAt?: number; document: { addEventListener(type: string, listener: () => void, options: object): void } };
        page.document.addEventListener('click', () => (page.clickedAt = performance.now()), { capture: true, once: true });
      });
      await proceed.click();
      const rendered = () => {
        const page = globalThis as unknown as { clickedAt?: number; document: { querySelector(selector: string): { textContent: string | null } | null } };
        const shown = page.document.querySelector('table.records caption')?.textContent?.includes('in all');
        return shown && page.clickedAt !== undefined ? Math.max(performance.now() - page.clickedAt, 0.001) : 0;
      };
      const handle = await page.waitForFunction(rendered, undefined, { polling: 'raf', timeout: 60_000 });
      times.push((await handle.jsonValue()) as number);
      await context.close();
    }
  } finally {
    await browser.close();
    stop();
  }
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  lines.push(
    `(portal) first interactive page (Continue clicked → credit limits table), ${ROUNDS} fresh visits: ${times.map((t) => t.toFixed(0)).join(', ')} ms; ` +
      `median ${median.toFixed(0)} ms, max ${sorted[sorted.length - 1]!.toFixed(0)} ms (target ≤ ${TARGET_MS} ms ${median <= TARGET_MS ? '✓ met' : '✗ not met'})`,
  );
  const rows: MeasuredRow[] = [
    { id: 'portal-tti', title: `portal: Continue clicked → credit limits table on the demo, ms (p50 median, p99 max of ${ROUNDS} fresh visits)`, connections: 1, service: { perSecond: 0, p50: median, p99: sorted[sorted.length - 1]!, failures: 0 } },
    { id: 'portal-bundle', title: `portal: JavaScript + CSS gzipped, bytes (in perSecond's place): ${gzipped}`, connections: 0, service: { perSecond: gzipped, p50: 0, p99: 0, failures: 0 } },
  ];
  lines.push(`record of this run: ${await writeBenchRecord({ rows, database: 'PGlite (demo --serve, pglite://memory)' })}`);
  return lines;
}
