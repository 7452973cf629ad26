/**
 * Prints every `event.created` of one project, one JSON line per event on stdout (status lines go to stderr).
 *
 *   pnpm nats:credentials consumer --tenant acme --project demo --out .local/acme-demo.creds
 *   pnpm example:events -- --creds .local/acme-demo.creds [--new] [--nats nats://127.0.0.1:14222]
 *
 * The credential is a tenant-scoped consumer's (docs/building-on-the-platform.md): it names its tenant, project and
 * durable consumer (the JWT's tags), reads only those events, and publishes nothing else. It is a durable
 * JetStream consumer (libs/consumer): stop it and start it again and it goes on where it stopped. Without --new a
 * new durable first prints the events still in the stream.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { connect, credsAuthenticator } from 'nats';
import { subscribe } from '@platform/consumer';
import { eventCreated } from '@platform/contracts';

function options() {
  const args = process.argv.slice(2).filter((a, i) => !(i === 0 && a === '--'));
  const { values } = parseArgs({
    args,
    options: {
      creds: { type: 'string' },
      new: { type: 'boolean', default: false },
      nats: { type: 'string' },
    },
  });
  const usage = 'usage: pnpm example:events -- --creds <consumer .creds file> [--new] [--nats url]';
  if (!values.creds) {
    console.error(usage);
    process.exit(2);
  }
  const creds = readFileSync(values.creds, 'utf8');
  const grant = grantOf(creds);
  if (!grant.tenantId || !grant.projectId || !grant.durable) {
    console.error(
      `${values.creds} is not a project consumer credential (pnpm nats:credentials consumer --tenant T --project P --out FILE)`,
    );
    process.exit(2);
  }
  // NATS of `npm start` (scripts/infra.sh) unless told otherwise.
  const natsUrl = values.nats ?? process.env.NATS_URL ?? 'nats://127.0.0.1:14222';
  return { ...grant, creds, fromNow: values.new, natsUrl } as {
    tenantId: string;
    projectId: string;
    durable: string;
    inboxPrefix: string;
    creds: string;
    fromNow: boolean;
    natsUrl: string;
  };
}

/** What the credential grants, from its user JWT: the name (its inbox prefix) and the tags the command wrote. */
function grantOf(creds: string) {
  const jwt = /-----BEGIN NATS USER JWT-----\s*(\S+)/.exec(creds)?.[1] ?? '';
  const claims = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8') || '{}') as {
    name?: string;
    nats?: { tags?: string[] };
  };
  const tag = (key: string) => claims.nats?.tags?.find((t) => t.startsWith(`${key}:`))?.slice(key.length + 1);
  return {
    tenantId: tag('tenant'),
    projectId: tag('project'),
    durable: tag('durable'),
    inboxPrefix: `_INBOX_${claims.name}`,
  };
}

async function main() {
  const o = options();
  // The credential's own inbox prefix: the only reply subjects it may read.
  const nc = await connect({
    servers: o.natsUrl,
    name: `event-printer:${o.durable}`,
    authenticator: credsAuthenticator(new TextEncoder().encode(o.creds)),
    inboxPrefix: o.inboxPrefix,
  });
  const sub = await subscribe(
    nc,
    eventCreated,
    {
      durable: o.durable,
      tenantId: o.tenantId,
      projectId: o.projectId,
      deliverPolicy: o.fromNow ? 'new' : 'all',
      concurrency: 1,
    },
    (e) => {
      const { event, dispatch } = e.data;
      process.stdout.write(
        JSON.stringify({
          id: e.id,
          occurredAt: e.occurredAt,
          tenantId: e.tenantId,
          projectId: e.projectId,
          event,
          dispatch,
        }) + '\n',
      );
    },
  );
  console.error(
    `[event-printer] listening for event.created of ${o.tenantId}/${o.projectId} on ${o.natsUrl} (durable ${o.durable})`,
  );
  const stop = async () => {
    await sub.stop(5_000);
    await nc.drain().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err) => {
  console.error('[event-printer] failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
