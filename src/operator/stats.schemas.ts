// Schemas of GET /api/admin/stats (the console's overview): they validate the query, type the handler and
// feed the OpenAPI document, where every field below is described.
import Type from 'typebox';

const At = Type.String({ format: 'date-time', description: 'The start of the bucket (UTC, RFC 3339).' });
const Count = (description: string) => Type.Integer({ minimum: 0, description });

export const StatsQuery = Type.Object({
  since: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Start of the window (RFC 3339, inclusive); default: 24 h before `until`. At most 24 h before it.',
    }),
  ),
  until: Type.Optional(
    Type.String({ format: 'date-time', description: 'End of the window (RFC 3339, exclusive); default: now.' }),
  ),
});

const AttemptBucket = Type.Object({
  At,
  Succeeded: Count('Attempts answered 2xx.'),
  Failed: Count('Attempts that failed, whatever the reason.'),
  FailedByKind: Type.Record(Type.String(), Type.Integer({ minimum: 1 }), {
    description:
      'Failed attempts by error kind (`timeout`, `connection`, `dns`, `refused_address`, `tls`, `redirect`, `status`); kinds with none are left out.',
  }),
});

const LatencyBucket = Type.Object({
  At,
  Count: Count('Attempts started in the bucket, failed ones included (a timeout counts its full wait).'),
  P50Ms: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: 'Median attempt duration in ms (nearest rank: a duration that was observed); null without attempts.',
  }),
  P99Ms: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: '99th percentile attempt duration in ms (nearest rank); null without attempts.',
  }),
});

const PendingPoint = Type.Object({
  At,
  Count: Count(
    'Deliveries pending at the end of the bucket (or at `until` for the last): created before then, and still pending or settled later. A delivery redelivered or recovered counts as pending since its creation.',
  ),
});

const TokenBucket = Type.Object({
  At,
  Total: Count('Tokens issued in the hour, every grant type together.'),
  ByGrant: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), {
    description:
      'Token endpoint successes by `grant_type`: `authorization_code`, `refresh_token`, `client_credentials`, the device and CIBA grants, and `other`; each is present, 0 when none.',
  }),
});

const SignInBucket = Type.Object({
  At,
  Succeeded: Count('signin.succeeded entries of the audit trail.'),
  Failed: Count('signin.failed entries: wrong password, unknown account or disabled account.'),
});

export const Stats = Type.Object({
  SinceUtc: Type.String({ format: 'date-time', description: 'The window’s start (inclusive).' }),
  UntilUtc: Type.String({ format: 'date-time', description: 'The window’s end (exclusive).' }),
  BucketSeconds: Type.Object(
    {
      Attempts: Type.Integer({ description: '60: one bucket a minute.' }),
      Latency: Type.Integer({
        description: '900: 15 minutes, enough attempts per bucket for a p99 to mean something.',
      }),
      Pending: Type.Integer({ description: '900: one point every 15 minutes.' }),
      Tokens: Type.Integer({ description: '3600: tokens are counted per hour.' }),
      SignIns: Type.Integer({ description: '3600.' }),
    },
    {
      description:
        'The width of each series’ buckets. Buckets are aligned on UTC multiples of their width, every bucket that overlaps the window is present (0 when empty), and the first and last count only the part inside the window.',
    },
  ),
  Webhooks: Type.Object({
    Attempts: Type.Array(AttemptBucket, { description: 'Delivery attempts started per minute, by outcome.' }),
    SuccessRate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
      description: 'Succeeded attempts / all attempts over the window; null without attempts.',
    }),
    Latency: Type.Array(LatencyBucket, { description: 'Attempt duration percentiles per 15 minutes.' }),
    Pending: Type.Object({
      Count: Count('Deliveries pending now (whatever the window).'),
      OldestAgeSeconds: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
        description: 'Seconds since the oldest pending delivery was created; null when none is pending.',
      }),
      Series: Type.Array(PendingPoint, { description: 'Pending deliveries over the window, every 15 minutes.' }),
    }),
  }),
  Tokens: Type.Array(TokenBucket, {
    description:
      'Tokens the built-in authorization server issued per hour, by grant (all 0 when it is off). Counted in memory and written every 5 s: the last seconds may not show yet.',
  }),
  SignIns: Type.Array(SignInBucket, { description: 'Sign-in attempts at the login page per hour, by outcome.' }),
});

export const StatsResponses = { 200: Stats };
