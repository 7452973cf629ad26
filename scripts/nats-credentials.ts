/**
 * `pnpm nats:credentials <command>`: the platform's NATS credentials (docs/security.md, "The message bus").
 *
 *   init     [--dir D] [--table F] keys (kept when they exist), the server's auth.conf, a .creds file per identity of
 *                                 the permission table (deploy/nats/permissions.json) and for the admin identity
 *   consumer --tenant T [--project P] [--durable NAME]... [--expires-days N] --out FILE [--dir D]
 *                                 a credential that reads only that tenant's (project's) events through its own
 *                                 durable consumers on PLATFORM_EVENTS, and publishes nothing else
 *   revoke   (--creds FILE | --user UKEY) [--dir D] [--reload PID]
 *                                 refuses that user from now on; rewrites auth.conf (the server applies it on reload:
 *                                 --reload signals a local server, kubectl rollout or a SIGHUP elsewhere)
 *
 * D defaults to NATS_AUTH_DIR, else .local/nats of the repository (git-ignored). In the image the same command is
 * `node /app/tools/nats-credentials.js <command> --dir D …` (bundled by deploy/Dockerfile).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type PermissionTable,
  issueUser,
  readCreds,
  revokeUser,
  serverAuthConfig,
  writeCredentialSet,
  writePrivate,
} from '@platform/nats-auth';
import {
  PLATFORM_EVENTS_STREAM,
  busPermissions,
  consumerPermission,
  consumerScope,
  inboxPrefixFor,
  subjectToken,
} from '@platform/contracts';

const root = join(__dirname, '..');

function fail(message: string): never {
  process.stderr.write(`nats:credentials: ${message}\n`);
  process.exit(2);
}

async function main() {
  const [command, ...rest] = process.argv.slice(2).filter((a) => a !== '--');
  const { values } = parseArgs({
    args: rest,
    options: {
      dir: { type: 'string' },
      table: { type: 'string' },
      tenant: { type: 'string' },
      project: { type: 'string' },
      durable: { type: 'string', multiple: true },
      'expires-days': { type: 'string' },
      out: { type: 'string' },
      creds: { type: 'string' },
      user: { type: 'string' },
      reload: { type: 'string' },
      'no-admin': { type: 'boolean' },
    },
  });
  const dir = values.dir ?? process.env.NATS_AUTH_DIR ?? join(root, '.local', 'nats');
  if (command === 'init') {
    // The table as generated from the declarations (the same as deploy/nats/permissions.json, which pnpm check keeps
    // equal to it), or a file given with --table.
    const table: PermissionTable = values.table
      ? (JSON.parse(readFileSync(values.table, 'utf8')) as PermissionTable)
      : { identities: busPermissions() };
    const written = await writeCredentialSet(dir, table, { admin: !values['no-admin'] });
    process.stdout.write(
      `[nats:credentials] ${dir}: auth.conf and ${written.length} credentials (${written.join(', ')})\n`,
    );
    return;
  }
  if (command === 'consumer') {
    if (!values.tenant) fail('consumer needs --tenant');
    if (!values.out) fail('consumer needs --out FILE');
    const scopeName = values.project ? `${values.tenant}-${values.project}` : values.tenant;
    const durables = values.durable?.length
      ? values.durable
      : [`events-${subjectToken(scopeName).replace(/%/g, '_')}`.slice(0, 64)];
    for (const d of durables)
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(d)) fail(`durable "${d}" must be 1-64 letters, digits, - or _`);
    const days = values['expires-days'] ? Number(values['expires-days']) : undefined;
    if (days !== undefined && !(days > 0)) fail('--expires-days must be a positive number');
    // The name is the inbox prefix too: unique per credential, so two consumers never see each other's replies.
    const name = `consumer-${Math.random().toString(36).slice(2, 10)}`;
    const inbox = inboxPrefixFor(name);
    const permission = consumerPermission({ tenantId: values.tenant, projectId: values.project, durables }, inbox);
    const issued = await issueUser(dir, name, permission, {
      expiresInS: days ? Math.round(days * 86_400) : undefined,
      tags: [
        `tenant:${values.tenant}`,
        ...(values.project ? [`project:${values.project}`] : []),
        ...durables.map((d) => `durable:${d}`),
      ],
    });
    writePrivate(values.out, issued.creds);
    const filter = consumerScope({ tenantId: values.tenant, projectId: values.project });
    process.stdout.write(
      [
        `credential: ${values.out}`,
        `user: ${issued.publicKey} (revoke with: pnpm nats:credentials revoke --user ${issued.publicKey})`,
        `durable consumers: ${durables.join(', ')} on ${PLATFORM_EVENTS_STREAM}, filter within ${filter}`,
        `inbox prefix: ${inbox} (set it as the client's inboxPrefix / nats --inbox-prefix)`,
        days ? `expires in ${days} days` : 'expires: never (until revoked)',
        '',
      ].join('\n'),
    );
    return;
  }
  if (command === 'revoke') {
    const user = values.user ?? (values.creds ? readCreds(readFileSync(values.creds, 'utf8')).publicKey : undefined);
    if (!user) fail('revoke needs --user UKEY or --creds FILE');
    revokeUser(dir, user);
    writePrivate(join(dir, 'auth.conf'), await serverAuthConfig(dir));
    if (values.reload) process.kill(Number(values.reload), 'SIGHUP');
    process.stdout.write(
      `[nats:credentials] revoked ${user}; ${join(dir, 'auth.conf')} rewritten${values.reload ? `, server ${values.reload} reloaded` : ' (reload the server to apply)'}\n`,
    );
    return;
  }
  fail('usage: nats:credentials init | consumer --tenant T [--project P] --out FILE | revoke --creds FILE');
}

main().catch((err) => fail((err as Error).message));
