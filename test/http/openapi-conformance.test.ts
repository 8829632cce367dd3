// The checker every test server carries (test/helpers/openapi-conformance.ts) catches what the document
// does not describe: an undocumented status, a body against its schema, an undocumented media type and a
// route missing from the document. Shown on a throwaway app with the same OpenAPI plugin.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { registerOpenApi } from '../../src/http/representation/openapi.ts';
import { checkResponsesAgainstDocument } from '../helpers/openapi-conformance.ts';

const COUNTED = {
  type: 'object',
  required: ['Count'],
  properties: { Count: { type: 'integer', minimum: 0 } },
};

async function throwawayApp(): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  await registerOpenApi(app, []);
  const schema = { tags: ['operations'], response: { 200: COUNTED } };
  // Sent as text so Fastify's serializer (which would coerce the body to the schema) stays out of the way.
  const json = 'application/json; charset=utf-8';
  app.get('/counted', { schema }, async (_request, reply) => reply.type(json).send('{"Count":3}'));
  app.get('/wrong-status', { schema }, async (_request, reply) =>
    (reply as FastifyReply).code(201).type(json).send('{"Count":3}'),
  );
  app.get('/wrong-body', { schema }, async (_request, reply) => reply.type(json).send('{"Count":"three"}'));
  app.get('/wrong-type', { schema }, async (_request, reply) => reply.type('text/plain').send('3'));
  app.get('/hidden', { schema: { hide: true } }, async () => ({ Count: 1 }));
  return app;
}

test('the conformance check catches an undocumented status, a body against its schema, a media type and a route missing from the document', async () => {
  const app = await throwawayApp();
  const conformance = checkResponsesAgainstDocument(app);
  try {
    for (const url of ['/counted', '/wrong-status', '/wrong-body', '/wrong-type', '/hidden', '/nowhere'])
      await app.inject({ method: 'GET', url });
    const found = conformance.violations.map((v) => `${v.url} ${v.problem}`);
    assert.equal(found.length, 4, found.join('\n'));
    assert.match(found[0]!, /^\/wrong-status status 201 is not documented for GET \/wrong-status/);
    assert.match(found[1]!, /^\/wrong-body the body does not match the documented schema: .*Count must be integer/);
    assert.match(found[2]!, /^\/wrong-type Content-Type text\/plain is not documented for 200/);
    assert.match(found[3]!, /^\/hidden route GET \/hidden is not in the OpenAPI document/);
    assert.throws(
      () => conformance.assertNone(),
      (err: Error) => {
        assert.equal(err.name, 'AssertionError');
        assert.match(err.message, /4 response\(s\) not described by \/openapi\.json/);
        assert.match(err.message, /GET \/wrong-body → 200 application\/json; charset=utf-8/);
        assert.match(err.message, /body: \{"Count":"three"\}/);
        return true;
      },
    );
  } finally {
    await app.close();
  }
});

test('a response the document describes passes the conformance check', async () => {
  const app = await throwawayApp();
  const conformance = checkResponsesAgainstDocument(app);
  try {
    const res = await app.inject({ method: 'GET', url: '/counted' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(conformance.violations, []);
    conformance.assertNone();
  } finally {
    await app.close();
  }
});
