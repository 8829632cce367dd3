// `signet user create|list|delete`
import { parseArgs } from 'node:util';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../auth-server/passwords.ts';
import { createUser, deleteUser, DuplicateEmailError, listUsers } from '../auth-server/users.repository.ts';
import { output, readStdin, UsageError, withDatabase } from './admin.ts';

export const USER_USAGE = `usage:
  signet user create --email <address> --name <name> --password-stdin [--json]
  signet user list [--json]
  signet user delete <id or email> [--json]`;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export async function userCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      name: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  const [action, target] = positionals;
  const json = values.json ?? false;
  switch (action) {
    case 'create': {
      if (!values.email || !EMAIL.test(values.email))
        throw new UsageError('--email <address> is required and must be an e-mail address');
      if (!values.name?.trim()) throw new UsageError('--name <name> is required');
      if (!values['password-stdin'])
        throw new UsageError(
          '--password-stdin is required: passwords are never taken from the command line (shell history, ps)',
        );
      const password = await readStdin();
      if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH)
        throw new UsageError(`the password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`);
      const user = await withDatabase(({ db }) =>
        createUser(db, { email: values.email!, name: values.name!, password }),
      ).catch((err: unknown) => {
        if (err instanceof DuplicateEmailError) throw new UsageError(err.message);
        throw err;
      });
      output(json, user, `created user ${user.id} (${user.email})`);
      return 0;
    }
    case 'list': {
      const users = await withDatabase(({ db }) => listUsers(db));
      output(json, users, users.map((u) => `${u.id}  ${u.email}  ${u.name}`).join('\n') || 'no users');
      return 0;
    }
    case 'delete': {
      if (!target) throw new UsageError('name the user to delete: signet user delete <id or email>');
      const deleted = await withDatabase(({ db }) => deleteUser(db, target));
      if (!deleted) {
        console.error(`signet: no user ${target}`);
        return 1;
      }
      output(
        json,
        { deleted: deleted.id },
        `deleted user ${deleted.id} (${deleted.email}) and every session and token issued for them`,
      );
      return 0;
    }
    default:
      throw new UsageError(USER_USAGE);
  }
}
