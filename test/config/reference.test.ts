// The configuration reference (docs/reference/configuration.md) is generated from SETTINGS: it must be the
// generator's output exactly, list every setting, and every setting-like variable the other docs name must exist.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { SETTINGS } from '../../src/config/config.ts';
import { CONFIGURATION_REFERENCE, renderConfigurationReference } from '../../src/config/reference.ts';

const ROOT = new URL('../../', import.meta.url);

/** README.md and every Markdown file under docs/, as [path, text]. */
function documentation(): [string, string][] {
  const files = readdirSync(new URL('docs/', ROOT), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', ...files].map((f) => [f, readFileSync(new URL(f, ROOT), 'utf8')]);
}

/** The prefixes of Signet's own settings: a backticked name with one of them must be a setting. */
const SETTING_PREFIX =
  /^(HOST|PORT|DATABASE_|SQLITE_|PUBLIC_URL|TRUST_PROXY|LOG_LEVEL|AUTH_|API_RESOURCE|ACCESS_TOKEN_|REFRESH_TOKEN_|SESSION_|KEY_ENCRYPTION|KEY_ROTATION|KEY_RELOAD|LOGIN_|CORS_|IDEMPOTENCY_|RATE_LIMIT_|REDIS_|BODY_LIMIT|MAX_|SHUTDOWN_|WEBHOOK_|EVENT_RETENTION|AUDIT_|METRICS_|DYNAMIC_)/;

describe('configuration reference', () => {
  test('docs/reference/configuration.md is what the generator renders from SETTINGS', () => {
    const committed = readFileSync(CONFIGURATION_REFERENCE, 'utf8');
    assert.ok(
      committed === renderConfigurationReference(),
      'docs/reference/configuration.md is stale: run `npm run docs:config` and commit the result',
    );
  });

  test('lists every setting once, with its default', () => {
    const page = renderConfigurationReference();
    for (const setting of SETTINGS) {
      const rows = page.split('\n').filter((line) => line.startsWith(`| \`${setting.env}\` |`));
      assert.equal(rows.length, 1, `${setting.env} must have exactly one row`);
      if (setting.default) assert.ok(rows[0]!.includes(`\`${setting.default}\``), `${setting.env}: default`);
    }
  });

  test('every setting the README and docs/ name exists', () => {
    const known = new Set<string>(SETTINGS.map((s) => s.env));
    const unknown: string[] = [];
    for (const [file, text] of documentation())
      for (const [, name] of text.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)(?:=[^`]*)?`/g))
        if (SETTING_PREFIX.test(name!) && !known.has(name!)) unknown.push(`${file}: ${name}`);
    assert.deepEqual(unknown, [], 'the docs name settings that SETTINGS does not have');
  });
});
