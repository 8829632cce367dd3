// Test token issuer: its own key pair, a JWKS file the app is pointed at (AUTH_JWKS_FILE), and
// access tokens in the RFC 9068 shape. Lets tests mint good and deliberately bad tokens.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

export const TEST_ISSUER = 'https://issuer.test/oauth';
export const TEST_RESOURCE = 'https://api.test/api';

export interface TestIssuer {
  jwksFile: string;
  publicJwk: JWK;
  token(claims?: TokenClaims, options?: SignOptions): Promise<string>;
  clientToken(scope: string, clientId?: string): Promise<string>;
  userToken(scope: string, sub?: string): Promise<string>;
}

export interface TokenClaims {
  sub?: string;
  client_id?: string;
  scope?: string;
  iss?: string;
  aud?: string;
  exp?: number;
  nbf?: number;
  [claim: string]: unknown;
}

export interface SignOptions {
  typ?: string;
  kid?: string;
  key?: CryptoKey;
  alg?: string;
}

export async function createTestIssuer(): Promise<TestIssuer> {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'ES256', use: 'sig' };
  const dir = mkdtempSync(join(tmpdir(), 'signet-jwks-'));
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [publicJwk] }));

  async function token(claims: TokenClaims = {}, options: SignOptions = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const payload = { iss: TEST_ISSUER, aud: TEST_RESOURCE, iat: now, exp: now + 900, jti: randomUUID(), ...claims };
    return new SignJWT(payload)
      .setProtectedHeader({ alg: options.alg ?? 'ES256', typ: options.typ ?? 'at+jwt', kid: options.kid ?? 'test-key' })
      .sign(options.key ?? privateKey);
  }

  return {
    jwksFile,
    publicJwk,
    token,
    clientToken: (scope, clientId = 'test-client') => token({ sub: clientId, client_id: clientId, scope }),
    userToken: (scope, sub = randomUUID()) => token({ sub, client_id: 'spa-client', scope }),
  };
}
