// Benchmark token issuer: one ES256 and one RS256 key in a single local JWKS file (AUTH_JWKS_FILE),
// access tokens in the RFC 9068 shape the API accepts. Tokens live for an hour, far beyond a run.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { BENCH_WEBHOOK_SECRET_KEY } from '../lib/databases.ts';

export const BENCH_ISSUER = 'https://issuer.bench/oauth';
export const BENCH_RESOURCE = 'https://api.bench/api';

/** What every benchmarked Signet instance starts with: loopback, tokens from the bench issuer, no rate limit in the way. */
export function benchServerEnv(databaseUrl: string, jwksFile: string): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: databaseUrl,
    AUTH_ISSUER: BENCH_ISSUER,
    API_RESOURCE: BENCH_RESOURCE,
    AUTH_JWKS_FILE: jwksFile,
    RATE_LIMIT_MAX: '100000000',
    LOG_LEVEL: 'silent',
    WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_SECRET_KEY,
    // Metrics on (recorded, on a free loopback port): several bench servers run at once, and 9464 may be taken.
    METRICS_PORT: '0',
  };
}

export type BenchAlgorithm = 'ES256' | 'RS256';

export interface BenchIssuer {
  jwksFile: string;
  /** Client-credentials token (isClient: may read and create any customer's orders). */
  token(alg: BenchAlgorithm, scope: string): Promise<string>;
  cleanup(): void;
}

export async function createBenchIssuer(): Promise<BenchIssuer> {
  const keys = {} as Record<BenchAlgorithm, CryptoKey>;
  const jwks = [];
  for (const alg of ['ES256', 'RS256'] as const) {
    const { publicKey, privateKey } = await generateKeyPair(alg);
    keys[alg] = privateKey;
    jwks.push({ ...(await exportJWK(publicKey)), kid: `bench-${alg.toLowerCase()}`, alg, use: 'sig' });
  }
  const dir = mkdtempSync(join(tmpdir(), 'signet-bench-jwks-'));
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: jwks }));
  return {
    jwksFile,
    token: async (alg, scope) => {
      const now = Math.floor(Date.now() / 1000);
      const clientId = 'bench-client';
      return new SignJWT({
        iss: BENCH_ISSUER,
        aud: BENCH_RESOURCE,
        sub: clientId,
        client_id: clientId,
        scope,
        iat: now,
        exp: now + 3600,
        jti: randomUUID(),
      })
        .setProtectedHeader({ alg, typ: 'at+jwt', kid: `bench-${alg.toLowerCase()}` })
        .sign(keys[alg]);
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
