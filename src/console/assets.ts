// The console's static files, read once at start and answered from memory with a strong ETag (RFC 9110
// §8.8.3; If-None-Match → 304). The app's own files (src/console/assets/) revalidate on every load, since
// their names carry no version; the vendored libraries, a fixed allow-list of ESM files from node_modules,
// are cached for a week. No CDN, nothing external: the console works offline. Each file is compressed
// once here, with gzip and brotli (http/representation/encodings.ts), and sent in the coding the browser accepts.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { precompress, type Encoded } from '../http/representation/encodings.ts';

export interface Asset {
  /** The file and its gzip and brotli forms, each with its own strong ETag. */
  encoded: Encoded;
  contentType: string;
  cacheControl: string;
}

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
};

const ASSETS_DIR = fileURLToPath(new URL('./assets/', import.meta.url));
const APP_CACHE = 'no-cache';
const VENDOR_CACHE = 'public, max-age=604800';

/** `/console/vendor/<name>` → the package and file it is read from. */
const VENDOR: Readonly<Record<string, { pkg: string; file: string }>> = {
  'preact.js': { pkg: 'preact', file: 'dist/preact.module.js' },
  'preact-hooks.js': { pkg: 'preact', file: 'hooks/dist/hooks.module.js' },
  'htm.js': { pkg: 'htm', file: 'dist/htm.module.js' },
  'uplot.js': { pkg: 'uplot', file: 'dist/uPlot.esm.js' },
  'uplot.css': { pkg: 'uplot', file: 'dist/uPlot.min.css' },
};

function asset(body: Buffer, name: string, cacheControl: string): Asset {
  return { encoded: precompress(body), contentType: TYPES[extname(name)] ?? 'application/octet-stream', cacheControl };
}

function packageDir(pkg: string): string {
  const entry = createRequire(import.meta.url).resolve(pkg);
  const marker = `${sep}node_modules${sep}${pkg}${sep}`;
  return entry.slice(0, entry.lastIndexOf(marker) + marker.length);
}

/**
 * preact/hooks imports the bare specifier "preact", which a browser cannot resolve. An import map would
 * need an inline script, which the console's CSP forbids, so the import is rewritten to the vendored path.
 */
function vendorBody(name: string, raw: Buffer): Buffer {
  if (name !== 'preact-hooks.js') return raw;
  return Buffer.from(raw.toString('utf8').replaceAll(/from\s*"preact"/g, 'from"/console/vendor/preact.js"'));
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

/** URL path → asset, for everything the console serves from files. */
export function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const file of listFiles(ASSETS_DIR)) {
    const path = relative(ASSETS_DIR, file).split(sep).join('/');
    assets.set(`/console/assets/${path}`, asset(readFileSync(file), path, APP_CACHE));
  }
  for (const [name, { pkg, file }] of Object.entries(VENDOR)) {
    const raw = readFileSync(join(packageDir(pkg), file));
    assets.set(`/console/vendor/${name}`, asset(vendorBody(name, raw), name, VENDOR_CACHE));
  }
  return assets;
}
