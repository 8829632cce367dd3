// OAuth 2.0 Protected Resource Metadata (RFC 9728) for the orders API: which authorization server
// issues its tokens and which scopes it understands. 401 responses point here (resource_metadata, §5.1).
import type { FastifyInstance } from 'fastify';

interface ResourceMetadataSettings {
  resource: string;
  authorizationServers: string[];
  scopes: string[];
}

/** RFC 9728 §3.1: the well-known segment goes between the host and the resource's path. */
export function resourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname === '/' ? '' : url.pathname}`;
}

/** RFC 9728 §2, the members sent; Fastify serializes with it, so it lists every one. */
const METADATA_SCHEMA = {
  type: 'object',
  description: 'Protected resource metadata (RFC 9728 §3.2).',
  required: ['resource', 'authorization_servers', 'scopes_supported', 'bearer_methods_supported', 'resource_name'],
  properties: {
    resource: { type: 'string', format: 'uri' },
    authorization_servers: { type: 'array', items: { type: 'string', format: 'uri' } },
    scopes_supported: { type: 'array', items: { type: 'string' } },
    bearer_methods_supported: { type: 'array', items: { type: 'string' } },
    resource_name: { type: 'string' },
  },
};

export function registerResourceMetadata(app: FastifyInstance, settings: ResourceMetadataSettings): void {
  const document = {
    resource: settings.resource,
    authorization_servers: settings.authorizationServers,
    scopes_supported: settings.scopes,
    bearer_methods_supported: ['header'],
    resource_name: 'Signet orders API',
  };
  const paths = new Set([
    '/.well-known/oauth-protected-resource',
    new URL(resourceMetadataUrl(settings.resource)).pathname,
  ]);
  for (const url of paths) {
    app.get(
      url,
      {
        schema: {
          tags: ['operations'],
          summary: 'Protected resource metadata (RFC 9728)',
          response: { 200: METADATA_SCHEMA },
        },
      },
      async (_request, reply) => {
        reply.header('cache-control', 'public, max-age=300');
        return document;
      },
    );
  }
}
