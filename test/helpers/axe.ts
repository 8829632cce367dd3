// axe-core in the browser tests (docs/guides/portal.md: every page is checked with axe-core): no serious or critical
// accessibility violation on any console page. The console's CSP (script-src 'self', no 'unsafe-inline') refuses an
// inline <script>, so page.addScriptTag({ content }) cannot load axe there, and bypassCSP would change the
// page under test. page.evaluate() runs the source through the DevTools protocol (Runtime.evaluate),
// which the page's CSP does not govern, and axe itself needs no eval.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { withDeadline } from './deadline.ts';

/** Read once: about 550 KB. */
let axeSource: string | undefined;
function source(): string {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  return axeSource;
}

/** What the assertion prints of one violation (axe's own result shape, trimmed). */
export interface A11yViolation {
  id: string;
  impact: string | null;
  help: string;
  helpUrl: string;
  targets: string[];
  nodeCount: number;
}

/** The part of axe's result for one violation that the report uses. */
interface AxeResult {
  id: string;
  impact: string | null;
  help: string;
  helpUrl: string;
  nodes: { target: unknown[] }[];
}

/** How many of a violation's nodes the failure message lists. */
const SHOWN_NODES = 3;
const AXE_TIMEOUT_MS = 30_000;

/** Runs axe on the page as it is now; every violation, whatever its impact. */
export async function axeViolations(page: Page): Promise<A11yViolation[]> {
  const run = async (): Promise<A11yViolation[]> => {
    if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(source());
    return page.evaluate(async (shown) => {
      // axe is the global the injected source defines; its default context is the whole document.
      const { axe } = globalThis as unknown as { axe: { run(options: object): Promise<{ violations: AxeResult[] }> } };
      const result = await axe.run({ resultTypes: ['violations'] });
      return result.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        helpUrl: v.helpUrl,
        targets: v.nodes.slice(0, shown).map((n) => n.target.map(String).join(' ')),
        nodeCount: v.nodes.length,
      }));
    }, SHOWN_NODES);
  };
  return withDeadline(run(), AXE_TIMEOUT_MS, () => `axe on ${page.url()}`);
}

export function describeViolation(v: A11yViolation): string {
  const more = v.nodeCount > v.targets.length ? ` (+${v.nodeCount - v.targets.length} more)` : '';
  return `${v.id} [${v.impact}] ${v.help} (${v.helpUrl}) at ${v.targets.join(', ')}${more}`;
}

/** Fails listing every serious or critical violation axe finds on the page; `label` names the page. */
export async function expectNoSeriousA11yViolations(page: Page, label: string): Promise<void> {
  const serious = (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    serious.map(describeViolation),
    [],
    `${label} (${page.url()}): ${serious.length} serious or critical accessibility violation(s):\n${serious.map(describeViolation).join('\n')}`,
  );
}
