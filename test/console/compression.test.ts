// The console's files and /openapi.json are sent compressed (docs/guides/portal.md: the first load's size):
// brotli or gzip as Accept-Encoding asks (RFC 9110 §12.5.3), identity when neither is accepted,
// `Vary: Accept-Encoding` on every answer (§12.5.5), an ETag per coding (§8.8.3) and 304 on a repeated
// conditional request. The API's own responses stay uncompressed. Raw node:http requests, since fetch
// would add its own Accept-Encoding and decode the body.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { withDeadline } from '../helpers/deadline.ts';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function rawGet(url: string, headers: Record<string, string>): Promise<Raw> {
  const answer = new Promise<Raw>((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  return withDeadline(answer, 30_000, `GET ${url}`);
}

function decode(raw: Raw): Buffer {
  const coding = raw.headers['content-encoding'];
  if (coding === 'br') return brotliDecompressSync(raw.body);
  if (coding === 'gzip') return gunzipSync(raw.body);
  return raw.body;
}

const show = (raw: Raw) => `status ${raw.status}, headers ${JSON.stringify(raw.headers)}`;

/** Paths under test: an app file, a vendored library, the shell and the OpenAPI document. */
const PATHS = ['/console/assets/app.js', '/console/vendor/uplot.js', '/console', '/openapi.json'];

for (const dialect of testDialects()) {
  describe(`compressed console files and /openapi.json (${dialect})`, () => {
    let server: AuthTestServer;
    before(async () => {
      server = await startAuthServer(dialect);
    });
    after(async () => {
      await server?.close();
    });

    for (const path of PATHS) {
      test(`${path}: br, gzip or identity by Accept-Encoding, each with its own ETag and Vary`, async () => {
        const plain = await rawGet(`${server.url}${path}`, {});
        assert.equal(plain.status, 200, show(plain));
        assert.equal(plain.headers['content-encoding'], undefined, show(plain));
        assert.equal(plain.headers.vary, 'accept-encoding', show(plain));

        const gzip = await rawGet(`${server.url}${path}`, { 'accept-encoding': 'gzip, deflate' });
        assert.equal(gzip.headers['content-encoding'], 'gzip', show(gzip));
        assert.equal(gzip.headers.vary, 'accept-encoding', show(gzip));
        assert.deepEqual(decode(gzip), plain.body);

        const br = await rawGet(`${server.url}${path}`, { 'accept-encoding': 'gzip, deflate, br, zstd' });
        assert.equal(br.headers['content-encoding'], 'br', show(br));
        assert.deepEqual(decode(br), plain.body);
        assert.ok(br.body.length <= gzip.body.length && gzip.body.length < plain.body.length, show(br));

        const tags = [plain, gzip, br].map((r) => r.headers.etag);
        assert.equal(new Set(tags).size, 3, `one ETag per coding: ${tags.join(' ')}`);
        assert.equal(Number(br.headers['content-length']), br.body.length, show(br));
      });

      test(`${path}: a repeated conditional request is answered 304 with the same coding's ETag`, async () => {
        const first = await rawGet(`${server.url}${path}`, { 'accept-encoding': 'br' });
        const etag = String(first.headers.etag);
        const again = await rawGet(`${server.url}${path}`, { 'accept-encoding': 'br', 'if-none-match': etag });
        assert.equal(again.status, 304, show(again));
        assert.equal(again.headers.etag, etag, show(again));
        assert.equal(again.headers.vary, 'accept-encoding', show(again));
        assert.equal(again.body.length, 0);
        // The brotli tag does not validate the gzip representation: that is sent in full.
        const other = await rawGet(`${server.url}${path}`, { 'accept-encoding': 'gzip', 'if-none-match': etag });
        assert.equal(other.status, 200, show(other));
        assert.equal(other.headers['content-encoding'], 'gzip', show(other));
      });
    }

    test('qvalues: a refused coding is not sent, identity when nothing compressed is accepted', async () => {
      const url = `${server.url}/console/assets/app.js`;
      const noBr = await rawGet(url, { 'accept-encoding': 'br;q=0, gzip;q=0.5' });
      assert.equal(noBr.headers['content-encoding'], 'gzip', show(noBr));
      const preferGzip = await rawGet(url, { 'accept-encoding': 'br;q=0.2, gzip' });
      assert.equal(preferGzip.headers['content-encoding'], 'gzip', show(preferGzip));
      const star = await rawGet(url, { 'accept-encoding': '*' });
      assert.equal(star.headers['content-encoding'], 'br', show(star));
      for (const value of ['identity', 'deflate', 'gzip;q=0, br;q=0', 'zstd']) {
        const raw = await rawGet(url, { 'accept-encoding': value });
        assert.equal(raw.status, 200, show(raw));
        assert.equal(raw.headers['content-encoding'], undefined, `${value}: ${show(raw)}`);
      }
    });

    test('the API itself is not compressed', async () => {
      const raw = await rawGet(`${server.url}/api/orders`, { 'accept-encoding': 'gzip, br' });
      assert.equal(raw.status, 401, show(raw));
      assert.equal(raw.headers['content-encoding'], undefined, show(raw));
      assert.match(raw.body.toString('utf8'), /"status":401/);
    });
  });
}
