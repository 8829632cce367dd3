// `signet keys rotate|generate-kek`
import { randomBytes } from 'node:crypto';
import { cliActor } from '../audit/audit.ts';
import { rotateKeys, signingAlgorithms } from '../auth-server/tokens/keys.ts';
import { KEY_CHECK_INTERVAL_MS } from '../auth-server/provider/provider-holder.ts';
import { output, UsageError, withDatabase } from './admin.ts';

export const KEYS_USAGE = `usage:
  signet keys rotate [--json]      new signing keys now; old ones stay published until their tokens expire
  signet keys generate-kek         print 32 random bytes, base64url: a KEY_ENCRYPTION_KEY or WEBHOOK_SECRET_KEY value`;

export async function keysCommand(args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const json = rest.includes('--json');
  switch (action) {
    case 'rotate': {
      const kids = await withDatabase(({ db }, config) =>
        rotateKeys(db, signingAlgorithms(config.accessTokenAlg), config.keyEncryptionKey, { actor: cliActor() }),
      );
      output(
        json,
        { kids },
        `new signing keys: ${kids.join(', ')}\nRunning servers switch to them within ${KEY_CHECK_INTERVAL_MS / 1000} s; tokens signed with the old keys stay valid until they expire.`,
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
