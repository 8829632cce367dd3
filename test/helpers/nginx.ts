// A real nginx in front of a test app, running deploy/nginx/signet.conf with only the machine-specific
// parts substituted (listen ports, upstream port, certificate and log paths). Runs in the foreground as
// a child process with its whole prefix (pid, logs, temp files) in a throw-away directory.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { accessSync, constants, chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './auth-server.ts';
import { startDaemon } from './daemon.ts';
import { COMMAND_TIMEOUT_MS, outcome } from './deadline.ts';

export const SIGNET_CONF = new URL('../../deploy/nginx/signet.conf', import.meta.url);
/** The server_name in deploy/nginx/signet.conf. */
export const PUBLIC_NAME = 'api.example.com';

/** Path of an executable nginx: /usr/sbin/nginx, else the first on PATH; null when there is none. */
export function findNginx(): string | null {
  const candidates = [
    '/usr/sbin/nginx',
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'nginx')),
  ];
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export interface RunningNginx {
  httpPort: number;
  httpsPort: number;
  /** PEM of the self-signed certificate for PUBLIC_NAME, to trust in TLS clients. */
  ca: string;
  errorLog(): string;
  stop(): Promise<void>;
}

export interface NginxOptions {
  /**
   * Forward the host without its port (`X-Forwarded-Host $host`) and the port on its own
   * (`X-Forwarded-Port $server_port`), as many nginx setups do, instead of signet.conf's `$http_host`.
   */
  separatePort?: boolean;
}

export async function startNginx(
  binary: string,
  upstreamPort: number,
  options: NginxOptions = {},
): Promise<RunningNginx> {
  // A free port can be taken between probing and nginx binding it; retry on that race only.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(binary, upstreamPort, options);
    } catch (err) {
      if (attempt >= 3 || !/Address already in use/.test((err as Error).message)) throw err;
    }
  }
}

async function startOnce(binary: string, upstreamPort: number, options: NginxOptions): Promise<RunningNginx> {
  const dir = mkdtempSync(join(tmpdir(), 'signet-nginx-'));
  chmodSync(dir, 0o755);
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const { cert, key } = selfSignedCertificate(PUBLIC_NAME);
  writeFileSync(join(dir, 'cert.pem'), cert);
  writeFileSync(join(dir, 'key.pem'), key, { mode: 0o600 });
  const confFile = join(dir, 'nginx.conf');
  writeFileSync(confFile, mainConfig(binary, dir, siteConfig(dir, httpPort, httpsPort, upstreamPort, options)));

  const errorLog = join(dir, 'error.log');
  const nginx = await startDaemon({
    name: 'nginx',
    binary,
    args: ['-p', `${dir}/`, '-c', confFile, '-e', errorLog],
    dir,
    logFile: errorLog,
    ports: [httpPort, httpsPort],
  });
  return { httpPort, httpsPort, ca: cert, errorLog: nginx.log, stop: nginx.stop };
}

/** deploy/nginx/signet.conf with the machine-specific values replaced; fails if the file no longer has them. */
function siteConfig(
  dir: string,
  httpPort: number,
  httpsPort: number,
  upstreamPort: number,
  options: NginxOptions,
): string {
  let conf = readFileSync(SIGNET_CONF, 'utf8');
  const substitute = (pattern: RegExp, replacement: string) => {
    if (!pattern.test(conf))
      throw new Error(`deploy/nginx/signet.conf no longer matches ${pattern}; update test/helpers/nginx.ts`);
    // A function, so `$host` and friends in the replacement stay literal.
    conf = conf.replace(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`), () => replacement);
  };
  substitute(/^\s*listen \[::\]:.*$/m, ''); // IPv6 may be unavailable on the test machine
  substitute(/\blisten 80\b/, `listen 127.0.0.1:${httpPort}`);
  substitute(/\blisten 443\b/, `listen 127.0.0.1:${httpsPort}`);
  substitute(/\bserver 127\.0\.0\.1:3000\b/, `server 127.0.0.1:${upstreamPort}`);
  substitute(/\/etc\/ssl\/signet\/fullchain\.pem/, join(dir, 'cert.pem'));
  substitute(/\/etc\/ssl\/signet\/privkey\.pem/, join(dir, 'key.pem'));
  substitute(/\/var\/log\/nginx\//, `${dir}/`);
  if (options.separatePort) {
    substitute(
      /proxy_set_header X-Forwarded-Host \$http_host;/,
      'proxy_set_header X-Forwarded-Host $host;\n        proxy_set_header X-Forwarded-Port $server_port;',
    );
  }
  return conf;
}

/** The main context a distribution's nginx.conf would provide, with every path inside `dir`. */
function mainConfig(binary: string, dir: string, site: string): string {
  // Compiled-in temp paths (/var/lib/nginx/...) are outside the prefix and may not be writable.
  const version = spawnSync(binary, ['-V'], { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
  if (version.error || version.status !== 0) throw new Error(`${binary} -V failed: ${outcome(version)}`);
  const built = version.stderr;
  const tempPaths = [...built.matchAll(/--http-([a-z-]+)-temp-path=/g)]
    .map((m) => m[1]!.replace('-', '_'))
    .filter((name) => !built.includes(`--without-http_${name}_module`))
    .map((name) => `    ${name}_temp_path ${join(dir, `${name}_temp`)};`);
  return [
    // Workers of a root master run as `nobody` by default and could not write the temp directories.
    userInfo().uid === 0 ? 'user root;' : '',
    'daemon off;',
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')} notice;`,
    'events { worker_connections 256; }',
    'http {',
    ...tempPaths,
    `    access_log ${join(dir, 'access.log')};`,
    site,
    '}',
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// A minimal self-signed ECDSA P-256 certificate (X.509 v3 with a subjectAltName), built with
// node:crypto alone so the test needs no openssl binary.
// ---------------------------------------------------------------------------------------------

function der(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const n = body.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}

const seq = (...parts: Buffer[]) => der(0x30, ...parts);

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const bytes = [a! * 40 + b!];
  for (const value of rest) {
    const chunk = [value & 0x7f];
    for (let v = value >> 7; v > 0; v >>= 7) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
}

function utcTime(date: Date): Buffer {
  return der(0x17, Buffer.from(`${date.toISOString().slice(2, 19).replace(/[-T:]/g, '')}Z`));
}

export function selfSignedCertificate(dnsName: string): { cert: string; key: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const ecdsaWithSha256 = seq(oid('1.2.840.10045.4.3.2'));
  const name = seq(der(0x31, seq(oid('2.5.4.3'), der(0x0c, Buffer.from(dnsName)))));
  const serial = randomBytes(8);
  serial[0] = (serial[0]! & 0x7f) | 0x01; // positive, no leading zero byte
  const now = Date.now();
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))), // v3
    der(0x02, serial),
    ecdsaWithSha256,
    name,
    seq(utcTime(new Date(now - 3600_000)), utcTime(new Date(now + 86_400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, seq(seq(oid('2.5.29.17'), der(0x04, seq(der(0x82, Buffer.from(dnsName))))))),
  );
  const signature = sign('sha256', tbs, privateKey);
  const certificate = seq(tbs, ecdsaWithSha256, der(0x03, Buffer.from([0]), signature));
  const base64 = certificate.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${base64}\n-----END CERTIFICATE-----\n`,
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}
