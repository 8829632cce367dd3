// `signet user create|list|set-role|set-password|disable|enable|delete`: the same users service as the
// admin API (src/auth-server/identity/users.service.ts), with the CLI's OS user as the audit actor.
import { parseArgs } from 'node:util';
import { cliActor } from '../audit/audit.ts';
import { listUsers } from '../auth-server/identity/users.repository.ts';
import { createUsersService, USER_ROLES, type User, type UsersService } from '../auth-server/identity/users.service.ts';
import { Problem } from '../http/problems/problems.ts';
import { listOption, output, readStdin, UsageError, withDatabase } from './admin.ts';

export const USER_USAGE = `usage:
  signet user create --email <address> --name <name> --password-stdin [--role admin]… [--json]
  signet user list [--json]
  signet user set-role <id or email> --role <role>[,<role>…] | --role none [--json]
  signet user set-password <id or email> --password-stdin [--json]
  signet user disable <id or email> [--json]
  signet user enable <id or email> [--json]
  signet user delete <id or email> [--json]
roles: ${USER_ROLES.join(', ')} (--role is repeatable or a comma list; set-role sets exactly these, none clears them)`;

class NoSuchUser extends Error {}

export async function userCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string', multiple: true },
      'password-stdin': { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  const [action, target] = positionals;
  const json = values.json ?? false;
  const withUsers = <T>(run: (users: UsersService) => Promise<T>): Promise<T> =>
    withDatabase(({ db }) => run(createUsersService({ db }))).catch(asUsageError);
  const named = (verb: string): string => {
    if (!target) throw new UsageError(`name the user: signet user ${verb} <id or email>`);
    return target;
  };
  try {
    switch (action) {
      case 'create': {
        if (!values.email) throw new UsageError('--email <address> is required');
        if (!values.name?.trim()) throw new UsageError('--name <name> is required');
        const password = await passwordFromStdin(values['password-stdin']);
        const roles = roleList(values.role);
        const user = await withUsers((users) =>
          users.create({ email: values.email!, name: values.name!, password, roles }, { actor: cliActor() }),
        );
        output(json, userJson(user), `created user ${user.id} (${user.email})${rolesText(user)}`);
        return 0;
      }
      case 'list': {
        const users = await withDatabase(({ db }) => listUsers(db));
        output(
          json,
          users.map(userJson),
          users
            .map((u) => `${u.id}  ${u.email}  ${u.name}${rolesText(u)}${u.disabledAt ? '  (disabled)' : ''}`)
            .join('\n') || 'no users',
        );
        return 0;
      }
      case 'set-role': {
        const id = named('set-role');
        if (values.role === undefined) throw new UsageError('--role <role> is required (--role none clears the roles)');
        const roles = roleList(values.role);
        const user = await withUsers((users) => users.setRoles(id, roles, { actor: cliActor() }));
        output(json, userJson(user), `user ${user.id} (${user.email}) roles: ${user.roles.join(', ') || 'none'}`);
        return 0;
      }
      case 'set-password': {
        const id = named('set-password');
        const password = await passwordFromStdin(values['password-stdin']);
        const user = await withUsers((users) => users.setPassword(id, password, { actor: cliActor() }));
        output(json, userJson(user), `password set for user ${user.id} (${user.email})`);
        return 0;
      }
      case 'disable':
      case 'enable': {
        const id = named(action);
        const user = await withUsers((users) =>
          action === 'disable' ? users.disable(id, { actor: cliActor() }) : users.enable(id, { actor: cliActor() }),
        );
        output(
          json,
          userJson(user),
          action === 'disable'
            ? `disabled user ${user.id} (${user.email}); their sessions and grants are revoked`
            : `enabled user ${user.id} (${user.email})`,
        );
        return 0;
      }
      case 'delete': {
        const id = named('delete');
        const deleted = await withUsers((users) => users.remove(id, { actor: cliActor() }));
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
  } catch (err) {
    if (!(err instanceof NoSuchUser)) throw err;
    console.error(`signet: ${err.message}`);
    return 1;
  }
}

/** `--role admin --role x`, `--role admin,x`; `none` alone means no role. */
function roleList(values: string[] | undefined): string[] {
  const roles = listOption(values);
  if (roles.length === 1 && roles[0] === 'none') return [];
  if (roles.includes('none')) throw new UsageError('--role none cannot be combined with a role');
  return roles;
}

async function passwordFromStdin(flag: boolean | undefined): Promise<string> {
  if (!flag)
    throw new UsageError(
      '--password-stdin is required: passwords are never taken from the command line (shell history, ps)',
    );
  return readStdin();
}

/** The service's problems, in the CLI's terms: an unknown user exits 1, anything else is a usage error (2). */
function asUsageError(err: unknown): never {
  if (err instanceof Problem) {
    if (err.status === 404) throw new NoSuchUser(err.detail);
    throw new UsageError(
      err.options.errors?.[0] ? `${err.options.errors[0].pointer.slice(1).toLowerCase()}: ${err.detail}` : err.detail,
    );
  }
  throw err;
}

function rolesText(user: User): string {
  return user.roles.length > 0 ? `  roles: ${user.roles.join(', ')}` : '';
}

/**
 * snake_case like every `--json` of the CLI (and OAuth's metadata, see clients.ts). `id` is the user's
 * `sub` in ID tokens, access tokens and userinfo, and the `CustomerId` of their orders.
 */
function userJson(user: User): Record<string, unknown> {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    roles: user.roles,
    disabled_at: user.disabledAt,
    created_at: user.createdAt,
  };
}
