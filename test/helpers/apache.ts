// A real Apache httpd with mod_auth_openidc in front of a test backend. It runs in the foreground as a
// child process (no system service), on its own port, with its own config, pid file and logs in a
// throw-away directory; the site configuration is the caller's (the block of docs/guides/signing-in-users.md, see
// test/proxy/mod-auth-openidc.test.ts), the main context around it is written here.
import { accessSync, chmodSync, constants, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { startDaemon } from './daemon.ts';

/** Where Debian and Ubuntu put the modules (`libapache2-mod-auth-openidc` installs its module there too). */
const MODULE_DIRS = ['/usr/lib/apache2/modules', '/usr/lib64/httpd/modules', '/usr/lib/httpd/modules'];
/**
 * The modules the main context and the guide's block needs (Debian enables all but the last two by
 * default; `a2enmod auth_openidc proxy_http` adds those); mod_unixd is compiled in.
 */
const MODULES: Record<string, string> = {
  mpm_event_module: 'mod_mpm_event.so',
  authn_core_module: 'mod_authn_core.so',
  authz_core_module: 'mod_authz_core.so',
  authz_user_module: 'mod_authz_user.so',
  proxy_module: 'mod_proxy.so',
  proxy_http_module: 'mod_proxy_http.so',
  auth_openidc_module: 'mod_auth_openidc.so',
};

export interface ApacheInstallation {
  binary: string;
  moduleDir: string;
}

/** An apache2 (or httpd) binary and a module directory holding mod_auth_openidc; null when either is missing. */
export function findApache(): ApacheInstallation | null {
  const candidates = ['/usr/sbin/apache2', '/usr/sbin/httpd'];
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean))
    candidates.push(join(dir, 'apache2'), join(dir, 'httpd'));
  const binary = candidates.find(executable);
  const moduleDir = MODULE_DIRS.find((dir) => existsSync(join(dir, MODULES.auth_openidc_module!)));
  return binary && moduleDir ? { binary, moduleDir } : null;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface RunningApache {
  port: number;
  /** Apache's error log so far (mod_auth_openidc logs why a login failed there). */
  errorLog(): string;
  stop(): Promise<void>;
}

export interface ApacheOptions {
  /** The port Apache listens on, 127.0.0.1 only (chosen before, since the site config names it). */
  port: number;
  /** The site configuration, included after the main context. */
  site: string;
  /** Environment for `${NAME}` in the configuration (Apache expands them when it reads the file). */
  env?: Record<string, string>;
}

export async function startApache(installation: ApacheInstallation, options: ApacheOptions): Promise<RunningApache> {
  const dir = mkdtempSync(join(tmpdir(), 'signet-apache-'));
  chmodSync(dir, 0o755);
  const confFile = join(dir, 'httpd.conf');
  writeFileSync(join(dir, 'site.conf'), options.site);
  writeFileSync(confFile, mainConfig(installation.moduleDir, dir, options.port));
  const apache = await startDaemon({
    name: 'apache',
    binary: installation.binary,
    args: ['-f', confFile, '-DFOREGROUND'],
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...options.env },
    dir,
    logFile: join(dir, 'error.log'),
    ports: [options.port],
  });
  return { port: options.port, errorLog: apache.output, stop: apache.stop };
}

/** What a distribution's apache2.conf would provide, with every path inside `dir` and one small child. */
function mainConfig(moduleDir: string, dir: string, port: number): string {
  return [
    `ServerRoot ${dir}`,
    `DefaultRuntimeDir ${dir}`,
    `PidFile ${join(dir, 'httpd.pid')}`,
    `ErrorLog ${join(dir, 'error.log')}`,
    'LogLevel warn auth_openidc:info proxy:info',
    'ServerName 127.0.0.1',
    `Listen 127.0.0.1:${port}`,
    ...Object.entries(MODULES).map(([name, file]) => `LoadModule ${name} ${join(moduleDir, file)}`),
    // A root parent hands requests to children that drop to this user; nothing they need is outside memory.
    userInfo().uid === 0 ? 'User #65534\nGroup #65534' : '',
    'StartServers 1',
    'ServerLimit 1',
    'ThreadsPerChild 8',
    'MaxRequestWorkers 8',
    'MinSpareThreads 1',
    'MaxSpareThreads 8',
    `Include ${join(dir, 'site.conf')}`,
    '',
  ].join('\n');
}

/** How long Apache may take to exit on SIGTERM before its process group is killed. */
