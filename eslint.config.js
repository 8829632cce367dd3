// Flat config: the recommended JS and TypeScript rules, no style rules (formatting is not a lint concern here).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        Buffer: 'readonly',
        structuredClone: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        performance: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The console's front end runs in the browser (no build step): its globals, not Node's.
    files: ['src/console/assets/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'navigator',
          'location',
          'history',
          'fetch',
          'URL',
          'URLSearchParams',
          'FormData',
          'HTMLElement',
          'Event',
          'CustomEvent',
          'PopStateEvent',
          'addEventListener',
          'removeEventListener',
          'dispatchEvent',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'requestAnimationFrame',
          'ResizeObserver',
          'Intl',
          'console',
          'AbortController',
          'crypto',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
  // The dependency direction (docs/architecture.md): config and db at the bottom, http above them, the features
  // (orders, webhooks, auth-server) above that and apart, app.ts, main.ts and cli/ at the top. A feature reaches
  // another only through a declared port; the receiver kit stands alone. ESLint's own no-restricted-imports, matched
  // on the import specifier (every import here is relative): a resolver plugin would pull in native bindings that
  // the registry here cannot install for every platform.
  ...layerRules(),
  {
    // A benchmark measures the product, not the suite: the test helpers change for the tests' own reasons.
    files: ['bench/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '(^|/)test/', message: 'bench/ imports no test helper (bench/lib/ has its own)' }] },
      ],
    },
  },
  {
    // Frozen migrations take Kysely<any> on purpose: they must not depend on today's table types.
    files: ['src/db/migrations/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);

/** One no-restricted-imports entry per layer: the modules it may not import, as patterns on the specifier. */
function layerRules() {
  const up = (...names) => `(^|/)(${names.join('|')})/`;
  const features = ['orders', 'webhooks', 'auth-server'];
  const top = '(^|/)(app|main)\\.ts$|(^|/)(cli|console|operator)/';
  const layer = (files, message, ...regexes) => ({
    files,
    rules: { 'no-restricted-imports': ['error', { patterns: regexes.map((regex) => ({ regex, message })) }] },
  });
  return [
    layer(
      ['src/config/**'],
      'config is the bottom layer',
      up('db', 'audit', 'metrics', 'http', 'idempotency', 'receiver', ...features),
      top,
    ),
    layer(
      ['src/db/**'],
      'db sits below http and the features',
      up('audit', 'metrics', 'http', 'idempotency', 'receiver', ...features),
      top,
    ),
    layer(
      ['src/http/**'],
      'http/ is infrastructure: a feature contributes to it when it registers (http/feature.ts)',
      up('idempotency', 'receiver', ...features),
      top,
    ),
    layer(
      ['src/idempotency/**'],
      'idempotency is infrastructure beside http: it knows no feature',
      up('receiver', ...features),
      top,
    ),
    layer(
      ['src/orders/**'],
      'orders reach other features only through ports (orders.events.ts)',
      up('receiver', 'webhooks', 'auth-server'),
      top,
    ),
    layer(
      ['src/auth-server/**'],
      'the authorization server knows no resource feature',
      up('receiver', 'orders', 'webhooks', 'idempotency'),
      top,
    ),
    layer(
      ['src/webhooks/**'],
      'webhooks reach orders only through the OrderEventSink port (orders.events.ts) and orders.representation.ts',
      up('receiver', 'auth-server', 'idempotency'),
      '(^|/)orders/(?!orders\\.(events|representation)\\.ts$)',
      top,
    ),
    layer(
      ['src/audit/*.ts'],
      'the audit trail sits beside db: every feature records into it, it knows none of them, nor HTTP',
      up('http', 'idempotency', 'receiver', ...features),
      top,
    ),
    layer(
      ['src/audit/admin/**'],
      "the audit trail's admin routes use http/ and the trail, no feature",
      up('idempotency', 'receiver', ...features),
      top,
    ),
    layer(
      ['src/metrics/**'],
      'the metrics sit beside db: features and http record into them, they know none of them',
      up('http', 'audit', 'idempotency', 'receiver', ...features),
      top,
    ),
    layer(
      ['src/operator/**'],
      'operator/ spans features through their services and admin routes, never their stores',
      '(^|/)store/|\\.repository\\.ts$',
      '(^|/)(app|main)\\.ts$|(^|/)(cli|console)/',
    ),
    layer(
      ['src/receiver/**'],
      'the receiver kit imports only its own files and the generic database adapters',
      '^\\.\\./(?!db/(sqlite/sqlite-driver|postgres/current-schema-introspector)\\.ts$)',
    ),
  ];
}
