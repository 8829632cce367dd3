// docs/reference/configuration.md, rendered from SETTINGS so that the names, defaults and meanings have one
// source: `npm run docs:config` writes it, test/config/reference.test.ts fails when the committed file is stale.
import { writeFileSync } from 'node:fs';
import { SETTINGS } from './settings.ts';

type AnySetting = (typeof SETTINGS)[number];

/** Sections of the page, in order; a setting goes to the first whose test its variable passes. */
const GROUPS: { title: string; test: (env: string) => boolean }[] = [
  {
    title: 'Listening and HTTP',
    test: (env) => /^(HOST|PORT|PUBLIC_URL|TRUST_PROXY|LOG_LEVEL|CORS_ORIGINS)$/.test(env),
  },
  { title: 'Database', test: (env) => /^(DATABASE_|SQLITE_)/.test(env) },
  {
    title: 'Tokens and the authorization server',
    test: (env) =>
      /^(AUTH_|API_RESOURCE|ACCESS_TOKEN_|REFRESH_TOKEN_|SESSION_|KEY_ENCRYPTION_KEY|LOGIN_|DYNAMIC_)/.test(env),
  },
  {
    title: 'Requests, limits and shutdown',
    test: (env) => /^(IDEMPOTENCY_|RATE_LIMIT_|REDIS_|BODY_LIMIT_|MAX_|SHUTDOWN_)/.test(env),
  },
  { title: 'Webhooks and events', test: (env) => /^(WEBHOOK_|EVENT_)/.test(env) },
  { title: 'Audit and metrics', test: () => true },
];

function defaultCell(setting: AnySetting): string {
  if (setting.default === undefined) return 'unset';
  if (setting.default === '') return 'empty';
  return `\`${setting.default}\``;
}

/** Markdown table cells may not hold a bare `|` or a line break. */
function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

/** The whole page, ending with a newline. */
export function renderConfigurationReference(settings: readonly AnySetting[] = SETTINGS): string {
  const lines = [
    '# Configuration',
    '',
    '<!-- Generated from SETTINGS (src/config/settings.ts, src/config/webhook-settings.ts) by',
    '     `npm run docs:config`; edit the settings, not this file. -->',
    '',
    'Everything is configured through environment variables, validated at start: an invalid value stops the',
    'process with a message naming the variable (`signet: invalid configuration: PORT: expected a whole number…`).',
    'Durations take `ms`, `s`, `m`, `h`, `d`. "unset" means the variable has no value unless you give one;',
    'where the default is computed, the meaning says how.',
  ];
  const placed = new Set<AnySetting>();
  for (const group of GROUPS) {
    const members = settings.filter((s) => !placed.has(s) && group.test(s.env));
    if (members.length === 0) continue;
    for (const s of members) placed.add(s);
    lines.push('', `## ${group.title}`, '', '| Variable | Default | Meaning |', '|---|---|---|');
    for (const s of members) lines.push(`| \`${s.env}\` | ${defaultCell(s)} | ${cell(s.doc)} |`);
  }
  return `${lines.join('\n')}\n`;
}

/** The generated page in this checkout. */
export const CONFIGURATION_REFERENCE = new URL('../../docs/reference/configuration.md', import.meta.url);

// `npm run docs:config` runs this module itself.
if (import.meta.main) writeFileSync(CONFIGURATION_REFERENCE, renderConfigurationReference());
