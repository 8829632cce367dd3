// `signet client create|list|delete|rotate-secret`
import { parseArgs } from 'node:util';
import {
  createClient,
  deleteClient,
  GRANT_TYPES,
  listClients,
  rotateClientSecret,
  type ClientRecord,
  type GrantType,
  type NewClient,
} from '../auth-server/clients.repository.ts';
import { API_SCOPES } from '../app.ts';
import { listOption, output, UsageError, withDatabase } from './admin.ts';

export const CLIENT_USAGE = `usage:
  signet client create --name <name> --type confidential|public
                       --grant authorization_code,refresh_token,client_credentials
                       [--redirect-uri <url>]... [--scope "orders:read orders:write"]
                       [--cors-origin <origin>]... [--first-party] [--json]
  signet client list [--json]
  signet client delete <client_id> [--json]
  signet client rotate-secret <client_id> [--json]`;

export async function clientCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      type: { type: 'string' },
      grant: { type: 'string', multiple: true },
      'redirect-uri': { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
      'cors-origin': { type: 'string', multiple: true },
      'first-party': { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  const [action, target] = positionals;
  const json = values.json ?? false;
  switch (action) {
    case 'create': {
      const client = validateNewClient({
        name: values.name?.trim() ?? '',
        type: values.type as NewClient['type'],
        grantTypes: listOption(values.grant) as GrantType[],
        redirectUris: listOption(values['redirect-uri'], /[,\s]+/),
        scopes: listOption(values.scope),
        corsOrigins: listOption(values['cors-origin']),
        firstParty: values['first-party'] ?? false,
      });
      const { record, clientSecret } = await withDatabase(({ db }) => createClient(db, client));
      output(
        json,
        { ...clientJson(record), ...(clientSecret ? { client_secret: clientSecret } : {}) },
        describeCreated(record, clientSecret),
      );
      return 0;
    }
    case 'list': {
      const clients = await withDatabase(({ db }) => listClients(db));
      output(
        json,
        clients.map(clientJson),
        clients.map((c) => `${c.clientId}  ${c.type.padEnd(12)}  ${c.name}  [${c.grantTypes.join(', ')}]`).join('\n') ||
          'no clients',
      );
      return 0;
    }
    case 'delete': {
      if (!target) throw new UsageError('name the client: signet client delete <client_id>');
      const deleted = await withDatabase(({ db }) => deleteClient(db, target));
      if (!deleted) return notFound(target);
      output(json, { deleted: target }, `deleted client ${target} and every grant and token issued to it`);
      return 0;
    }
    case 'rotate-secret': {
      if (!target) throw new UsageError('name the client: signet client rotate-secret <client_id>');
      const secret = await withDatabase(({ db }) => rotateClientSecret(db, target));
      if (!secret) return notFound(target, ' (or it is a public client, which has no secret)');
      output(
        json,
        { client_id: target, client_secret: secret },
        `client_secret: ${secret}\n\nThe old secret no longer works. This is the only time the new one is shown.`,
      );
      return 0;
    }
    default:
      throw new UsageError(CLIENT_USAGE);
  }
}

/** OAuth's own field names (RFC 7591 §2) for scripts. */
function clientJson(c: ClientRecord): Record<string, unknown> {
  return {
    client_id: c.clientId,
    client_name: c.name,
    client_type: c.type,
    grant_types: c.grantTypes,
    redirect_uris: c.redirectUris,
    scope: c.scopes.join(' '),
    cors_origins: c.corsOrigins,
    first_party: c.firstParty,
    created_at: c.createdAt,
    secret_rotated_at: c.secretRotatedAt,
  };
}

function notFound(clientId: string, hint = ''): number {
  console.error(`signet: no client ${clientId}${hint}`);
  return 1;
}

function describeCreated(record: ClientRecord, secret: string | undefined): string {
  const lines = [`client_id: ${record.clientId}`];
  if (secret)
    lines.push(
      `client_secret: ${secret}`,
      '',
      'Store the secret now: only its hash is kept, it cannot be shown again.',
    );
  return lines.join('\n');
}

/** Refuses combinations that could not work or would be unsafe, with a message saying what to change. */
export function validateNewClient(client: NewClient): NewClient {
  if (!client.name) throw new UsageError('--name <name> is required');
  if (client.type !== 'confidential' && client.type !== 'public')
    throw new UsageError('--type must be confidential or public');
  if (client.grantTypes.length === 0)
    throw new UsageError(`--grant is required: one or more of ${GRANT_TYPES.join(', ')}`);
  for (const grant of client.grantTypes)
    if (!GRANT_TYPES.includes(grant)) throw new UsageError(`unknown grant ${grant}: use ${GRANT_TYPES.join(', ')}`);
  const grants = new Set(client.grantTypes);
  if (client.type === 'public' && grants.has('client_credentials'))
    throw new UsageError('a public client cannot use client_credentials: it has no secret to authenticate with');
  if (grants.has('refresh_token') && !grants.has('authorization_code'))
    throw new UsageError('refresh_token needs authorization_code: refresh tokens are only issued in the code flow');
  if (grants.has('authorization_code') && client.redirectUris.length === 0)
    throw new UsageError('authorization_code needs at least one --redirect-uri');
  if (!grants.has('authorization_code') && client.redirectUris.length > 0)
    throw new UsageError('--redirect-uri only applies to clients with the authorization_code grant');
  for (const uri of client.redirectUris) validateRedirectUri(uri);
  for (const scope of client.scopes)
    if (!Object.hasOwn(API_SCOPES, scope))
      throw new UsageError(
        `unknown scope ${scope}: use ${Object.keys(API_SCOPES).join(', ')} (openid, profile and email are allowed to every client with authorization_code)`,
      );
  for (const origin of client.corsOrigins) {
    const url = URL.parse(origin);
    if (!url || url.origin !== origin)
      throw new UsageError(`--cors-origin ${origin} is not an origin (scheme://host[:port], no path)`);
  }
  return client;
}

/** Exact-match redirect URIs (RFC 9700 §2.1): absolute, no fragment, https unless loopback (RFC 8252 §7.3). */
function validateRedirectUri(uri: string): void {
  const url = URL.parse(uri);
  if (!url) throw new UsageError(`--redirect-uri ${uri} is not an absolute URL`);
  if (url.hash) throw new UsageError(`--redirect-uri ${uri} must not contain a fragment (RFC 6749 §3.1.2)`);
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw new UsageError(`--redirect-uri ${uri} must use https (http only for localhost/127.0.0.1)`);
}
