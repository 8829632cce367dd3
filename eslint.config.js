// Flat config: the recommended JS and TypeScript rules, no style rules (formatting is not a lint concern here).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';

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
    // The dependency direction (ARCHITECTURE.md rule 11, docs/architecture.md): config and db at the bottom, http above
    // them, the features (orders, webhooks, auth-server) above that and apart, app.ts, main.ts and cli/ at the top. A
    // feature reaches another only through a declared port; the receiver kit stands alone.
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js'] })] },
    rules: { 'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: layerZones() }] },
  },
  {
    // Frozen migrations take Kysely<any> on purpose: they must not depend on today's table types.
    files: ['src/db/migrations/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);

function layerZones() {
  const top = ['src/app.ts', 'src/main.ts', 'src/cli'];
  const features = ['src/orders', 'src/webhooks', 'src/auth-server'];
  const zone = (target, from, message, except) => ({ target, from, message, ...(except ? { except } : {}) });
  return [
    zone('src/config', ['src/db', 'src/http', 'src/receiver', ...features, ...top], 'config is the bottom layer'),
    zone('src/db', ['src/http', 'src/receiver', ...features, ...top], 'db sits below http and the features'),
    zone(
      'src/http',
      ['src/receiver', ...features, ...top],
      'http/ is infrastructure: a feature contributes to it when it registers (http/feature.ts)',
    ),
    zone(
      'src/orders',
      ['src/webhooks', 'src/auth-server', 'src/receiver', ...top],
      'orders reach other features only through ports (orders.events.ts)',
    ),
    zone(
      'src/auth-server',
      ['src/orders', 'src/webhooks', 'src/receiver', ...top],
      'the authorization server knows no resource feature',
    ),
    zone(
      'src/webhooks',
      ['src/auth-server', 'src/receiver', ...top],
      'webhooks reach other features only through ports',
    ),
    // The one declared port: webhooks implement orders' OrderEventSink and render orders as event Data.
    zone(
      'src/webhooks',
      'src/orders',
      'webhooks may import only orders.events.ts (the OrderEventSink port) and orders.representation.ts',
      ['./orders.events.ts', './orders.representation.ts'],
    ),
    // The consumer kit imports nothing from the producer side but the generic database adapters.
    zone('src/receiver', 'src', 'the receiver kit imports only its own files and the generic database adapters', [
      './receiver',
      './db/sqlite-driver.ts',
      './db/current-schema-introspector.ts',
    ]),
  ];
}
