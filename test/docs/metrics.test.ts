// docs/reference/metrics.md lists Signet's metric families by hand: each row must be a family that /metrics
// exposes, with the type it says, and every `signet_*` family exposed must have its row, so the page
// cannot drift from the code in either direction.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { scrape } from '../helpers/prometheus.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const METRICS_DOC = new URL('../../docs/reference/metrics.md', import.meta.url);

/** `| \`signet_…\` | counter | …` rows of the page's table: family name → type. */
function documentedFamilies(): Map<string, string> {
  const rows = readFileSync(METRICS_DOC, 'utf8').matchAll(/^\| `(signet_[a-z0-9_]+)` \| ([a-z]+) \|/gm);
  return new Map([...rows].map(([, name, type]) => [name!, type!]));
}

describe('docs/reference/metrics.md and /metrics agree', () => {
  let server: TestServer;
  let exposed: Map<string, string>;
  before(async () => {
    server = await startServer('sqlite');
    const text = await scrape(server.metricsUrl);
    exposed = new Map([...text.matchAll(/^# TYPE (signet_\S+) (\S+)$/gm)].map(([, name, type]) => [name!, type!]));
  });
  after(() => server.close());

  test('every documented family is exposed with the documented type', () => {
    const documented = documentedFamilies();
    assert.ok(documented.size >= 10, `only ${documented.size} rows found: is the table's shape still the same?`);
    for (const [name, type] of documented) assert.equal(exposed.get(name), type, `${name} in /metrics`);
  });

  test('every exposed signet_* family is documented', () => {
    const documented = documentedFamilies();
    const missing = [...exposed.keys()].filter((name) => !documented.has(name));
    assert.deepEqual(missing, [], 'families /metrics exposes without a row in docs/reference/metrics.md');
  });
});
