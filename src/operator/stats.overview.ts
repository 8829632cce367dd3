// The operator overview (GET /api/admin/stats): each feature's series over the window, composed. Every
// feature lays its own counts on regular time axes (src/db/time-buckets.ts); this file only puts them side
// by side, through the features' services, never their tables.
import type { Db, Dialect } from '../db/executor.ts';
import type { TimeWindow } from '../db/time-buckets.ts';
import { SIGNIN_BUCKET_SECONDS, signInSeries } from '../audit/signin-stats.ts';
import { TOKEN_BUCKET_SECONDS, tokenSeries } from '../auth-server/tokens/token-stats.ts';
import { WEBHOOK_BUCKET_SECONDS, webhookOverview } from '../webhooks/admin/overview.service.ts';

const BUCKET_SECONDS = {
  ...WEBHOOK_BUCKET_SECONDS,
  Tokens: TOKEN_BUCKET_SECONDS,
  SignIns: SIGNIN_BUCKET_SECONDS,
} as const;

interface Source {
  db: Db;
  dialect: Dialect;
}

/** The whole overview over [since, until); `now` dates the pending deliveries' age. */
export async function overview(source: Source, window: TimeWindow, now: Date) {
  const [webhooks, tokens, signIns] = await Promise.all([
    webhookOverview(source, window, now),
    tokenSeries(source.db, window),
    signInSeries(source.db, source.dialect, window),
  ]);
  return {
    SinceUtc: window.since.toISOString(),
    UntilUtc: window.until.toISOString(),
    BucketSeconds: { ...BUCKET_SECONDS },
    Webhooks: webhooks,
    Tokens: tokens,
    SignIns: signIns,
  };
}
