// `signet client create|list|delete|rotate-secret|registration-token [list|revoke]`: the same clients service as the
// admin API (src/auth-server/clients/clients.service.ts), with the CLI's OS user as the audit actor.
import { endPortalsOfClient } from '../console/portal-revocation.ts';
import { parseArgs } from 'node:util';
import { cliActor } from '../audit/audit.ts';
import {
  listClients,
  type ClientRecord,
  type GrantType,
  type NewClient,
} from '../auth-server/clients/clients.repository.ts';
import {
  clientMetadataView,
  ClientRuleError,
  createClientsService,
  type ClientField,
  type ClientsService,
  type OwnerChange,
} from '../auth-server/clients/clients.service.ts';
import {
  issueRegistrationToken,
  listRegistrationTokens,
  parseDuration,
  revokeRegistrationToken,
  type RegistrationTokenRecord,
} from '../auth-server/clients/registration-tokens.ts';
import { registrationPolicyOf } from '../auth-server/clients/registration-policy.ts';
import { API_SCOPES } from '../app.ts';
import { ADMIN_SCOPES } from '../operator/admin.feature.ts';
import { Problem } from '../http/problems/problems.ts';
import { listOption, output, UsageError, withDatabase } from './admin.ts';

export const CLIENT_USAGE = `usage:
  signet client create --name <name> --type confidential|public
                       --grant authorization_code,refresh_token,client_credentials
                       [--redirect-uri <url>]... [--post-logout-redirect-uri <url>]... [--scope "openid profile email orders:read"]
                       [--cors-origin <origin>]... [--first-party] [--resource-server] [--owner <email>] [--json]
  signet client list [--json]
  signet client delete <client_id> [--json]
  signet client rotate-secret <client_id> [--json]
  signet client registration-token [--expires-in 1d] [--scope "orders:read"] [--max-uses 1]
                       [--description <text>] [--json]
                       an initial access token for dynamic registration (DYNAMIC_REGISTRATION=true)
  signet client registration-token list [--json]
  signet client registration-token revoke <rt_…> [--json]`;

/** The option that sets each member, so a refusal names what to change on the command line. */
const OPTION_FOR: Record<ClientField, string> = {
  client_name: '--name',
  client_type: '--type',
  grant_types: '--grant',
  redirect_uris: '--redirect-uri',
  post_logout_redirect_uris: '--post-logout-redirect-uri',
  scope: '--scope',
  cors_origins: '--cors-origin',
  first_party: '--first-party',
  resource_server: '--resource-server',
  owner: '--owner',
};

/** Exit 1: the client does not exist, or has no secret to rotate. */
class Refused extends Error {}

/** The service's refusals as the CLI's: a usage error (exit 2) in terms of the options, or not found (exit 1). */
function fromService(err: unknown): never {
  if (err instanceof ClientRuleError) throw new UsageError(err.explain(OPTION_FOR[err.field]));
  if (err instanceof Problem && (err.type.status === 404 || err.type.status === 409)) throw new Refused(err.detail);
  if (err instanceof Problem && err.type.status < 500) throw new UsageError(err.detail);
  throw err;
}

export async function clientCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      type: { type: 'string' },
      grant: { type: 'string', multiple: true },
      'redirect-uri': { type: 'string', multiple: true },
      'post-logout-redirect-uri': { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
      'cors-origin': { type: 'string', multiple: true },
      'first-party': { type: 'boolean' },
      'resource-server': { type: 'boolean' },
      owner: { type: 'string' },
      'expires-in': { type: 'string' },
      'max-uses': { type: 'string' },
      description: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const [action, target] = positionals;
  const json = values.json ?? false;
  const withClients = <T>(run: (clients: ClientsService) => Promise<T>): Promise<T> =>
    withDatabase(({ db }) => run(createClientsService({ db, apiScopes: Object.keys(API_SCOPES) }))).catch(fromService);
  const named = (verb: string): string => {
    if (!target) throw new UsageError(`name the client: signet client ${verb} <client_id>`);
    return target;
  };
  try {
    switch (action) {
      case 'create': {
        const input: NewClient & OwnerChange = {
          name: values.name?.trim() ?? '',
          type: values.type as NewClient['type'],
          grantTypes: listOption(values.grant) as GrantType[],
          redirectUris: listOption(values['redirect-uri'], /[,\s]+/),
          postLogoutRedirectUris: listOption(values['post-logout-redirect-uri'], /[,\s]+/),
          scopes: listOption(values.scope),
          corsOrigins: listOption(values['cors-origin']),
          firstParty: values['first-party'] ?? false,
          resourceServer: values['resource-server'] ?? false,
          owner: values.owner,
        };
        const { client, clientSecret } = await withClients((clients) => clients.create(input, { actor: cliActor() }));
        output(
          json,
          { ...clientJson(client), ...(clientSecret ? { client_secret: clientSecret } : {}) },
          describeCreated(client, clientSecret),
        );
        return 0;
      }
      case 'list': {
        const clients = await withDatabase(({ db }) => listClients(db));
        output(
          json,
          clients.map(clientJson),
          clients
            .map((c) => `${c.clientId}  ${c.type.padEnd(12)}  ${c.name}  [${c.grantTypes.join(', ')}]`)
            .join('\n') || 'no clients',
        );
        return 0;
      }
      case 'delete': {
        const clientId = named('delete');
        await withClients((clients) => clients.remove(clientId, { actor: cliActor() }));
        await withDatabase(({ db }) => endPortalsOfClient(db, clientId, new Date()));
        output(json, { deleted: clientId }, `deleted client ${clientId} and every grant and token issued to it`);
        return 0;
      }
      case 'rotate-secret': {
        const clientId = named('rotate-secret');
        const { clientSecret } = await withClients((clients) => clients.rotateSecret(clientId, { actor: cliActor() }));
        // Its portals act with its rights: they end with the old secret (docs/guides/portal.md, "Ending portals").
        await withDatabase(({ db }) => endPortalsOfClient(db, clientId, new Date()));
        output(
          json,
          { client_id: clientId, client_secret: clientSecret },
          `client_secret: ${clientSecret}\n\nThe old secret no longer works. This is the only time the new one is shown.`,
        );
        return 0;
      }
      case 'registration-token':
        if (target === 'list') return await listTokens(json);
        if (target === 'revoke') return await revokeToken(positionals[2], json);
        if (target !== undefined) throw new UsageError(CLIENT_USAGE);
        return await registrationToken(values, json);
      default:
        throw new UsageError(CLIENT_USAGE);
    }
  } catch (err) {
    if (err instanceof Refused) {
      console.error(`signet: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

/** An initial access token (RFC 7591 §3): shown once, stored as a hash, limited in time and scopes. */
async function registrationToken(
  options: { 'expires-in'?: string; scope?: string[]; 'max-uses'?: string; description?: string },
  json: boolean,
) {
  const expiresInSeconds = parseDuration(options['expires-in'] ?? '1d');
  if (expiresInSeconds === undefined) throw new UsageError('--expires-in takes a duration such as 30m, 12h or 7d');
  const maxUses = options['max-uses'] === undefined ? 1 : Number(options['max-uses']);
  if (!/^\d{1,9}$/.test(options['max-uses'] ?? '1'))
    throw new UsageError('--max-uses takes a whole number (default 1)');
  const issued = await withDatabase(({ db }, config) => {
    if (!config.dynamicRegistration)
      throw new UsageError(
        'dynamic client registration is off: set DYNAMIC_REGISTRATION=true (docs/guides/admin-api.md)',
      );
    return issueRegistrationToken(
      db,
      {
        expiresInSeconds,
        scopes: listOption(options.scope),
        maxUses,
        description: options.description,
        policy: registrationPolicyOf(config, Object.keys(API_SCOPES), Object.keys(ADMIN_SCOPES)),
      },
      { actor: cliActor() },
    );
  }).catch(fromService);
  output(
    json,
    { ...tokenJson(issued), registration_token: issued.token },
    [
      `registration_token: ${issued.token}`,
      `id: ${issued.id}`,
      `expires_at: ${issued.expiresAt}`,
      `max_uses: ${issued.maxUses}`,
      `scope: ${issued.scopes.join(' ') || '(sign-in only)'}`,
      '',
      'Give it to the developer registering the client (Authorization: Bearer at the registration endpoint).',
      'This is the only time it is shown.',
    ].join('\n'),
  );
  return 0;
}

/** Every registration token, newest first, with its state; never the token itself. */
async function listTokens(json: boolean) {
  const tokens: RegistrationTokenRecord[] = [];
  await withDatabase(async ({ db }) => {
    let after: { createdAt: string; id: string } | undefined;
    for (;;) {
      const page = await listRegistrationTokens(db, { limit: 100, after });
      tokens.push(...page.tokens);
      const last = page.tokens.at(-1);
      if (!page.more || !last) return;
      after = { createdAt: last.createdAt, id: last.id };
    }
  });
  output(
    json,
    tokens.map(tokenJson),
    tokens
      .map(
        (t) =>
          `${t.id}  ${t.status.padEnd(8)}  ${t.useCount}/${t.maxUses} used  expires ${t.expiresAt}  [${t.scopes.join(' ')}]${t.description ? `  ${t.description}` : ''}`,
      )
      .join('\n') || 'no registration tokens',
  );
  return 0;
}

async function revokeToken(id: string | undefined, json: boolean) {
  if (!id) throw new UsageError('name the token: signet client registration-token revoke <rt_…>');
  const token = await withDatabase(({ db }) => revokeRegistrationToken(db, id, { actor: cliActor() })).catch(
    fromService,
  );
  output(json, tokenJson(token), `revoked ${token.id}: no client can be registered with it any more`);
  return 0;
}

/** The admin API's names (GET /api/admin/registration-tokens). */
function tokenJson(t: RegistrationTokenRecord): Record<string, unknown> {
  return {
    id: t.id,
    scope: t.scopes.join(' '),
    max_uses: t.maxUses,
    use_count: t.useCount,
    status: t.status,
    description: t.description,
    created_by: t.createdBy,
    created_at: t.createdAt,
    expires_at: t.expiresAt,
    revoked_at: t.revokedAt,
  };
}

/** OAuth's own field names (RFC 7591 §2) for scripts. */
function clientJson(c: ClientRecord): Record<string, unknown> {
  return clientMetadataView(c);
}

function describeCreated(record: ClientRecord, secret: string | undefined): string {
  const lines = [`client_id: ${record.clientId}`];
  if (record.ownerEmail) lines.push(`owner: ${record.ownerEmail}`);
  if (secret)
    lines.push(
      `client_secret: ${secret}`,
      '',
      'Store the secret now: only its hash is kept, it cannot be shown again.',
    );
  return lines.join('\n');
}
