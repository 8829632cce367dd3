// GET /console/snippets.json: the copy-paste snippets that verify a delivery (src/console/snippets/), for
// the portal's "Verify deliveries" page. Public like /openapi.json (they hold no secret); read once at
// start, so the page shows exactly the files test/console/snippets.test.ts runs. Compressed once and
// answered with ETags per coding like the console's files (http/representation/encodings.ts).
import type { FastifyInstance } from 'fastify';
import { precompress, sendEncoded } from '../http/representation/encodings.ts';
import { SNIPPETS } from './snippets/index.ts';

const BODY = precompress(
  Buffer.from(
    JSON.stringify({
      Items: SNIPPETS.map((s) => ({
        Id: s.id,
        Title: s.title,
        Language: s.language,
        FileName: s.fileName,
        Source: s.source,
      })),
    }),
  ),
);

export function snippetRoutes(app: FastifyInstance): void {
  app.get('/console/snippets.json', { schema: { hide: true } }, async (request, reply) =>
    sendEncoded(request, reply, BODY, { contentType: 'application/json; charset=utf-8', cacheControl: 'no-cache' }),
  );
}
