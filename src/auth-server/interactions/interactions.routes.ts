// The login and consent pages oidc-provider sends the user agent to (its `interactions.url`). Forms are
// CSRF-safe twice over: the interaction cookie is SameSite=Lax and path-bound, and every form carries a
// token that is an HMAC of the interaction id under the cookie-signing key.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { parse as parseForm } from 'node:querystring';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { decoyHash, PASSWORD_MAX_LENGTH, verifyPassword } from '../identity/passwords.ts';
import { loginWaitMs, recordLoginFailure, recordLoginSuccess, throttleKeys } from '../identity/login-throttle.ts';
import { pageHeaders, renderConsentPage, renderErrorPage, renderLoginPage } from './pages.ts';
import type { ProviderHolder } from '../provider/provider-holder.ts';
import { describeScope } from '../provider/scopes.ts';
import { recordConsent, recordSignIn, requestWhere } from '../provider/audit-events.ts';
import { scopesAllowedFor, type ScopeRoles } from '../identity/roles.ts';
import { findUserByEmail, findUserById } from '../identity/users.repository.ts';

type Interaction = Awaited<ReturnType<ProviderHolder['provider']['interactionDetails']>>;

interface InteractionOptions {
  holder: ProviderHolder;
  db: Kysely<Database>;
  loginMaxFailures: number;
  basePath: string;
  scopeDescriptions: Readonly<Record<string, string>>;
  /** Scopes only users holding a role are granted (roles.ts): the consent leaves the others out. */
  scopeRoles?: ScopeRoles;
}

const UID = {
  type: 'object',
  properties: { uid: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } },
  required: ['uid'],
} as const;

export async function interactionRoutes(app: FastifyInstance, options: InteractionOptions): Promise<void> {
  const { holder, db } = options;
  const scopeRoles = options.scopeRoles ?? {};
  /** The roles of the signed-in user: what the role-gated scopes are granted by. */
  const rolesOf = async (details: Interaction): Promise<string[]> =>
    (await findUserById(db, String(details.session?.accountId ?? '')))?.roles ?? [];
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 8192 },
    (_request, body, done) => done(null, parseForm(body as string)),
  );
  const paths = (uid: string) => ({
    self: `${options.basePath}/interaction/${uid}`,
    login: `${options.basePath}/interaction/${uid}/login`,
    confirm: `${options.basePath}/interaction/${uid}/confirm`,
    abort: `${options.basePath}/interaction/${uid}/abort`,
  });
  const csrfFor = (uid: string): string =>
    createHmac('sha256', holder.keys.cookieKeys[0] ?? '')
      .update(`interaction:${uid}`)
      .digest('base64url');
  const csrfValid = (uid: string, presented: unknown): boolean =>
    typeof presented === 'string' &&
    holder.keys.cookieKeys.some((key) => {
      const expected = Buffer.from(createHmac('sha256', key).update(`interaction:${uid}`).digest('base64url'));
      const actual = Buffer.from(presented);
      return expected.length === actual.length && timingSafeEqual(expected, actual);
    });

  /** The interaction, or a page explaining why there is none (expired, cookies blocked, tampered). */
  async function load(
    request: FastifyRequest<{ Params: { uid: string } }>,
    reply: FastifyReply,
  ): Promise<Interaction | undefined> {
    try {
      const details = await holder.provider.interactionDetails(request.raw, reply.raw);
      if (details.uid === request.params.uid) return details;
    } catch {
      // SessionNotFound: the cookie is missing or the interaction expired.
    }
    await sendPage(
      reply,
      400,
      renderErrorPage(
        'invalid_request',
        'This sign-in page has expired or cookies are blocked. Go back to the application and start again.',
      ),
    );
    return undefined;
  }

  /** load(), for a form post: the form must carry this interaction's CSRF token, or the answer is a 403 page. */
  async function loadPosted(
    request: FastifyRequest<{ Params: { uid: string }; Body: Record<string, unknown> }>,
    reply: FastifyReply,
  ): Promise<Interaction | undefined> {
    const details = await load(request, reply);
    if (!details || csrfValid(details.uid, request.body?.csrf)) return details;
    await sendPage(
      reply,
      403,
      renderErrorPage('invalid_request', 'The form could not be verified. Reload the page and try again.'),
    );
    return undefined;
  }

  /** What the pages need to know about the client: its display name and whether it is first-party. */
  async function clientInfo(details: Interaction): Promise<{ name: string; firstParty: boolean }> {
    const client = await holder.provider.Client.find(String(details.params.client_id));
    return {
      name: client?.clientName ?? String(details.params.client_id),
      firstParty: (client as unknown as { first_party?: boolean } | undefined)?.first_party === true,
    };
  }

  function redirectOrigins(details: Interaction): string[] {
    const uri = typeof details.params.redirect_uri === 'string' ? URL.parse(details.params.redirect_uri) : null;
    return uri ? [uri.origin] : [];
  }

  async function sendPage(
    reply: FastifyReply,
    status: number,
    html: string,
    formOrigins: string[] = [],
    extra: Record<string, string> = {},
  ): Promise<void> {
    await reply
      .code(status)
      .headers({ ...pageHeaders(formOrigins), ...extra })
      .send(html);
  }

  async function showLogin(
    reply: FastifyReply,
    details: Interaction,
    status = 200,
    error?: string,
    email?: string,
    extra: Record<string, string> = {},
  ): Promise<void> {
    const page = renderLoginPage({
      action: paths(details.uid).login,
      csrf: csrfFor(details.uid),
      clientName: (await clientInfo(details)).name,
      error,
      email,
    });
    await sendPage(reply, status, page, redirectOrigins(details), extra);
  }

  async function finish(
    request: FastifyRequest,
    reply: FastifyReply,
    result: Parameters<ProviderHolder['provider']['interactionResult']>[2],
  ): Promise<void> {
    const location = await holder.provider.interactionResult(request.raw, reply.raw, result, {
      mergeWithLastSubmission: false,
    });
    await reply.code(303).header('cache-control', 'no-store').redirect(location, 303);
  }

  /** consent.granted for the grant just saved (audit-events.ts: written after the save, not with it). */
  async function auditConsent(
    request: FastifyRequest,
    details: Interaction,
    grantId: string,
    automatic: boolean,
  ): Promise<void> {
    const accountId = String(details.session?.accountId ?? '');
    const consent = { accountId, clientId: clientIdOf(details), grantId, automatic };
    await recordConsent(db, holder.provider, requestWhere(request), consent);
  }

  app.get<{ Params: { uid: string } }>(
    '/interaction/:uid',
    { schema: { params: UID, hide: true } },
    async (request, reply) => {
      const details = await load(request, reply);
      if (!details) return;
      if (details.prompt.name === 'login') return showLogin(reply, details);
      const client = await clientInfo(details);
      if (details.prompt.name === 'consent' && client.firstParty) {
        // First-party clients (registered with --first-party) skip the consent page: the grant is what they asked.
        const grantId = await saveConsent(holder, details, await rolesOf(details), scopeRoles);
        await auditConsent(request, details, grantId, true);
        return finish(request, reply, { consent: { grantId } });
      }
      // A scope the user's roles do not allow is not offered: saveConsent would not grant it.
      const scopes = scopesAllowedFor(requestedScopes(details), await rolesOf(details), scopeRoles);
      const page = renderConsentPage({
        action: paths(details.uid).confirm,
        abortAction: paths(details.uid).abort,
        csrf: csrfFor(details.uid),
        clientName: client.name,
        scopes: scopes.map((scope) => describeScope(scope, options.scopeDescriptions)),
      });
      await sendPage(reply, 200, page, redirectOrigins(details));
    },
  );

  app.post<{ Params: { uid: string }; Body: Record<string, unknown> }>(
    '/interaction/:uid/login',
    { schema: { params: UID, hide: true } },
    async (request, reply) => {
      const details = await loadPosted(request, reply);
      if (!details) return;
      const body = request.body ?? {};
      if (details.prompt.name !== 'login')
        return sendPage(reply, 400, renderErrorPage('invalid_request', 'This step of sign-in is already done.'));
      const email = typeof body.email === 'string' ? body.email.trim() : '';
      const password = typeof body.password === 'string' ? body.password : '';
      if (email === '' || password === '')
        return showLogin(reply, details, 400, 'Enter your e-mail address and your password.', email);
      if (password.length > PASSWORD_MAX_LENGTH)
        return showLogin(reply, details, 400, 'That password is longer than any password here.', email);

      const keys = throttleKeys(email, request.clientOrigin.ip);
      const waitMs = await loginWaitMs(db, keys);
      if (waitMs > 0) {
        const seconds = Math.ceil(waitMs / 1000);
        request.server.metrics.signIn('throttled');
        return showLogin(
          reply,
          details,
          429,
          `Too many failed attempts. Try again in ${seconds} second${seconds === 1 ? '' : 's'}.`,
          email,
          { 'retry-after': String(seconds) },
        );
      }
      const user = await findUserByEmail(db, email);
      const valid = await verifyPassword(password, user?.passwordHash ?? (await decoyHash()));
      // A disabled user gets the same answer as a wrong password: the page does not tell an attacker
      // which accounts exist or were disabled (docs/security.md, "Roles" / the admin API's disable).
      if (!user || !valid || user.disabledAt !== null) {
        const failure = !user ? 'unknown_account' : !valid ? 'wrong_password' : 'account_disabled';
        // The throttle's count and the audit entry commit together (docs/security.md, "The audit trail").
        await db.transaction().execute(async (trx) => {
          await recordLoginFailure(trx, keys, { maxFailures: options.loginMaxFailures });
          await recordSignIn(trx, requestWhere(request), { userId: user?.id, clientId: clientIdOf(details), failure });
        });
        request.server.metrics.signIn('failure');
        return showLogin(reply, details, 401, 'The e-mail address or the password is not right.', email);
      }
      await db.transaction().execute(async (trx) => {
        await recordLoginSuccess(trx, keys);
        await recordSignIn(trx, requestWhere(request), { userId: user.id, clientId: clientIdOf(details) });
      });
      request.server.metrics.signIn('success');
      await finish(request, reply, { login: { accountId: user.id, amr: ['pwd'] } });
    },
  );

  app.post<{ Params: { uid: string }; Body: Record<string, unknown> }>(
    '/interaction/:uid/confirm',
    { schema: { params: UID, hide: true } },
    async (request, reply) => {
      const details = await loadPosted(request, reply);
      if (!details) return;
      if (details.prompt.name !== 'consent' || !details.session?.accountId)
        return sendPage(reply, 400, renderErrorPage('invalid_request', 'Sign in first.'));
      const grantId = await saveConsent(holder, details, await rolesOf(details), scopeRoles);
      await auditConsent(request, details, grantId, false);
      await finish(request, reply, { consent: { grantId } });
    },
  );

  app.post<{ Params: { uid: string }; Body: Record<string, unknown> }>(
    '/interaction/:uid/abort',
    { schema: { params: UID, hide: true } },
    async (request, reply) => {
      const details = await loadPosted(request, reply);
      if (!details) return;
      await finish(request, reply, { error: 'access_denied', error_description: 'the user denied the request' });
    },
  );
}

function clientIdOf(details: Interaction): string {
  return String(details.params.client_id);
}

/** Everything the consent prompt asks for: OIDC scopes and per-resource scopes not yet granted. */
function requestedScopes(details: Interaction): string[] {
  const missing = details.prompt.details as {
    missingOIDCScope?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  return [
    ...new Set([...(missing.missingOIDCScope ?? []), ...Object.values(missing.missingResourceScopes ?? {}).flat()]),
  ];
}

/**
 * Grants what the prompt found missing. A role-gated scope the user's roles do not allow is recorded as
 * rejected (oidc-provider then stops asking for it) instead of granted; provider.ts also drops it at the
 * token endpoint, so a grant from before a role was removed cannot carry it into a token either.
 */
async function saveConsent(
  holder: ProviderHolder,
  details: Interaction,
  roles: readonly string[],
  scopeRoles: ScopeRoles,
): Promise<string> {
  const { Grant } = holder.provider;
  const accountId = details.session?.accountId as string;
  const clientId = String(details.params.client_id);
  const grant = (details.grantId ? await Grant.find(details.grantId) : undefined) ?? new Grant({ accountId, clientId });
  const missing = details.prompt.details as {
    missingOIDCScope?: string[];
    missingOIDCClaims?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    const allowed = scopesAllowedFor(scopes, roles, scopeRoles);
    const withheld = scopes.filter((scope) => !allowed.includes(scope));
    if (allowed.length > 0) grant.addResourceScope(resource, allowed.join(' '));
    if (withheld.length > 0) grant.rejectResourceScope(resource, withheld.join(' '));
  }
  return grant.save();
}
