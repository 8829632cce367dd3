// The live half of authentication: a signed access token says who the user was and what they were
// granted when it was issued; their roles and disabled state now are asked of the account store on the
// request (cached briefly by whoever implements the check). A token whose user was disabled or deleted is
// refused with invalid_token (RFC 6750 §3.1: "revoked"); one whose user lost a role keeps only the scopes
// the remaining roles allow, so the scope check answers insufficient_scope (docs/security.md, "Roles").
import type { FastifyRequest } from 'fastify';
import { invalidToken, type Principal } from './token-verifier.ts';

/** The scopes the token's user may still use, or why the token no longer works. */
export type AccountVerdict = { scopes: ReadonlySet<string> } | { refused: string };

/** Synchronous when the answer is at hand (the common case: no promise per request). */
export type AccountCheck = (principal: Principal) => AccountVerdict | Promise<AccountVerdict>;

/** Applies the check to the request's principal; calls `next` once the principal stands as it is now. */
export function checkAccount(
  request: FastifyRequest,
  check: AccountCheck | undefined,
  next: (err?: Error) => void,
): void {
  const principal = request.principal;
  // Client-credentials tokens have no user behind them; the client's own registration governs them.
  if (!check || !principal || principal.isClient) return next();
  const apply = (verdict: AccountVerdict): void => {
    if ('refused' in verdict) {
      request.principal = null;
      request.authFailure = invalidToken(verdict.refused);
    } else if (verdict.scopes !== principal.scopes) {
      request.principal = { ...principal, scopes: verdict.scopes };
    }
    next();
  };
  const verdict = check(principal);
  if (verdict instanceof Promise) verdict.then(apply, next);
  else apply(verdict);
}
