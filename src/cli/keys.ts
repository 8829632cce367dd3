// `signet keys list|rotate|generate-kek`
import { randomBytes } from 'node:crypto';
import { cliActor } from '../audit/audit.ts';
import { listKeys, rotateKeys, signingAlgorithms, type KeyInfo } from '../auth-server/tokens/keys.ts';
import { output, UsageError, withDatabase } from './admin.ts';

export const KEYS_USAGE = `usage:
  signet keys list [--json]        the signing keys: signing, pending (and when they start signing), retired
  signet keys rotate [--json]      new signing keys, published now and signing after KEY_ROTATION_DELAY; old ones stay published until their tokens expire
  signet keys generate-kek         print 32 random bytes, base64url: a KEY_ENCRYPTION_KEY or WEBHOOK_SECRET_KEY value`;

export async function keysCommand(args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const json = rest.includes('--json');
  switch (action) {
    case 'list': {
      const keys = await withDatabase(({ db }) => listKeys(db));
      output(json, keys.map(keyJson), keys.map(keyLine).join('\n'));
      return 0;
    }
    case 'rotate': {
      const { kids, activatesAt } = await withDatabase(({ db }, config) =>
        rotateKeys(
          db,
          signingAlgorithms(config.accessTokenAlg),
          config.keyEncryptionKey,
          { actor: cliActor() },
          {
            delayMs: config.keyRotationDelayMs,
          },
        ),
      );
      output(
        json,
        { kids, activates_at: activatesAt.toISOString() },
        `new signing keys: ${kids.join(', ')}\nPublished now; every running server signs with them from ${activatesAt.toISOString()} (KEY_ROTATION_DELAY). Tokens signed with the old keys stay valid until they expire.`,
      );
      return 0;
    }
    case 'generate-kek':
      console.log(randomBytes(32).toString('base64url'));
      return 0;
    default:
      throw new UsageError(KEYS_USAGE);
  }
}

function keyJson(key: KeyInfo) {
  return {
    kid: key.kid,
    use: key.use,
    alg: key.alg,
    state: key.state,
    created_at: key.createdAt.toISOString(),
    activates_at: key.activatesAt.toISOString(),
    retired_at: key.retiredAt && key.retiredAt.toISOString(),
  };
}

function keyLine(key: KeyInfo): string {
  const when =
    key.state === 'pending'
      ? `signs from ${key.activatesAt.toISOString()}`
      : key.state === 'retired'
        ? `retired ${key.retiredAt!.toISOString()}`
        : key.retiredAt
          ? `signing until ${key.retiredAt.toISOString()}`
          : `signing since ${key.activatesAt.toISOString()}`;
  return `${key.state.padEnd(8)} ${key.use.padEnd(6)} ${key.alg.padEnd(6)} ${key.kid}  ${when}`;
}
