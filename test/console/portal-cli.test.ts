// `signet client rotate-secret` and `signet client delete` end the client's portals (docs/guides/portal.md, "Ending
// portals") as the admin API does: the open portal session's next request is 401, an unused link 410.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { TEST_WEBHOOK_SECRET_KEY, testDialects } from '../helpers/databases.ts';
import { COMMAND_TIMEOUT_MS, outcome } from '../helpers/deadline.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { fetchWithin } from '../helpers/http.ts';
import { createPortalClient, issueLink, openPortalOverHttp } from '../helpers/portal.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;

for (const dialect of testDialects())
  describe(`the CLI ends a client's portals [${dialect}]`, () => {
    let server: AuthTestServer;
    before(async () => {
      server = await startAuthServer(dialect);
    });
    after(() => server.close());

    for (const verb of ['rotate-secret', 'delete'])
      test(`signet client ${verb} ends its portal sessions and unused links`, async () => {
        const client = await createPortalClient(server, `CLI shop ${verb}`);
        const portal = await openPortalOverHttp(server, (await issueLink(server, client.token, randomUUID())).Url);
        const unused = await issueLink(server, client.token);
        expectStatus(await portal.call('GET', '/console/api/webhooks'), 200);
        const ran = spawnSync(process.execPath, [BIN, 'client', verb, client.clientId, '--json'], {
          env: {
            ...process.env,
            LOG_LEVEL: 'silent',
            WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
            DATABASE_URL: server.databaseUrl,
          },
          encoding: 'utf8',
          timeout: COMMAND_TIMEOUT_MS,
        });
        assert.equal(ran.status, 0, outcome(ran));
        expectProblem(await portal.call('GET', '/console/api/webhooks'), 401, 'unauthorized');
        const refused = await fetchWithin(unused.Url, { method: 'POST', headers: { origin: server.url } });
        assert.equal(refused.status, 410, await refused.text());
      });
  });
