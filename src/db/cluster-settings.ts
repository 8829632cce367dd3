// The settings every instance of a cluster must share (docs/operations/scaling-out.md, "Settings"), checked against
// what the database holds. The first instance to start records them; an instance started later with other values
// refuses to start, naming each one: with another issuer or API audience its tokens would be refused by the other
// instances and theirs by it, and with another key-encryption key it could not open the signing keys they share.
// Values derived from HOST and PORT (no PUBLIC_URL: one instance in development) are compared only with a value
// set on purpose; between themselves the newest wins, so moving a development server to another port just works.
// A deliberate change (a new domain, a new key) is recorded with `signet migrate --adopt-settings`.
import { createHmac } from 'node:crypto';
import { ConfigError, hostForUrl, type Config } from '../config/config.ts';
import { fromDbTime, toDbTime } from './codecs.ts';
import type { Db, Executor } from './executor.ts';

interface ClusterSetting {
  value: string;
  /** Set by the operator, rather than derived from HOST and PORT. */
  explicit: boolean;
}

/** What is compared, by the variable that sets it. Never a secret: the key-encryption key as a fingerprint. */
function clusterSettings(config: Readonly<Config>): Record<string, ClusterSetting> {
  const derivedBase = `http://${hostForUrl(config.host)}:${config.port}`;
  const explicit = (value: string, derived: string) => config.publicUrl !== undefined || value !== derived;
  return {
    AUTH_ISSUER: { value: config.authIssuer, explicit: explicit(config.authIssuer, `${derivedBase}/oauth`) },
    API_RESOURCE: { value: config.apiResource, explicit: explicit(config.apiResource, `${derivedBase}/api`) },
    KEY_ENCRYPTION_KEY: {
      value: config.keyEncryptionKey ? `fingerprint ${fingerprint(config.keyEncryptionKey)}` : 'none',
      explicit: true,
    },
  };
}

/** An HMAC of a constant under the key: equal for equal keys, and says nothing of the key. */
function fingerprint(key: Buffer): string {
  return createHmac('sha256', key).update('signet cluster settings v1').digest('hex').slice(0, 16);
}

export class ClusterSettingsError extends ConfigError {}

/**
 * Records the settings the database does not hold yet (the first start; of concurrent first starts, the first to
 * commit is what the others are compared with), then refuses if one differs.
 */
export async function checkClusterSettings(db: Db, config: Readonly<Config>, now = new Date()): Promise<void> {
  const wanted = clusterSettings(config);
  await db
    .insertInto('cluster_settings')
    .values(Object.entries(wanted).map(([name, setting]) => row(name, setting, now)))
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const differing: string[] = [];
  for (const recorded of await db.selectFrom('cluster_settings').selectAll().execute()) {
    const setting = wanted[recorded.name];
    if (!setting || setting.value === recorded.value) continue;
    // Both derived from HOST and PORT: a development server that moved; this start's value is the cluster's now.
    if (!setting.explicit && recorded.explicit === 0) await replace(db, recorded.name, setting, now);
    else
      differing.push(
        `${recorded.name} is ${show(recorded.name, setting.value)} here, but ${show(recorded.name, recorded.value)} in the cluster (recorded ${fromDbTime(recorded.recorded_at).toISOString()})`,
      );
  }
  if (differing.length > 0)
    throw new ClusterSettingsError(
      `${differing.join('; ')}. Every instance on this database must use the same value (docs/operations/scaling-out.md, "Settings"). To change it for the whole cluster, stop every instance and run \`signet migrate --adopt-settings\` with the new configuration.`,
    );
}

function show(name: string, value: string): string {
  return name === 'KEY_ENCRYPTION_KEY' ? value : JSON.stringify(value);
}

/** `signet migrate --adopt-settings`: this configuration becomes the cluster's. The names changed, for the output. */
export async function adoptClusterSettings(db: Db, config: Readonly<Config>, now = new Date()): Promise<string[]> {
  const wanted = clusterSettings(config);
  const recorded = new Map(
    (await db.selectFrom('cluster_settings').selectAll().execute()).map((r) => [r.name, r.value]),
  );
  const changed = Object.keys(wanted).filter((name) => recorded.get(name) !== wanted[name]!.value);
  for (const name of changed) await replace(db, name, wanted[name]!, now);
  return changed;
}

async function replace(db: Executor, name: string, setting: ClusterSetting, now: Date): Promise<void> {
  const { value, explicit, recorded_at } = row(name, setting, now);
  await db
    .insertInto('cluster_settings')
    .values({ name, value, explicit, recorded_at })
    .onConflict((oc) => oc.column('name').doUpdateSet({ value, explicit, recorded_at }))
    .execute();
}

function row(name: string, setting: ClusterSetting, now: Date) {
  return { name, value: setting.value, explicit: setting.explicit ? 1 : 0, recorded_at: toDbTime(now) };
}
