/**
 * Prints every `event.created` of one project, one JSON line per event on stdout (status lines go to stderr).
 *
 *   pnpm example:events -- --tenant acme --project demo [--durable name] [--new] [--nats nats://127.0.0.1:14222]
 *
 * It is a durable JetStream consumer (libs/consumer): stop it and start it again with the same durable name and
 * it goes on where it stopped. Without --new a new durable first prints the events still in the stream.
 */
import { parseArgs } from 'node:util';
import { connect } from 'nats';
import { subscribe } from '@platform/consumer';
import { eventCreated } from '@platform/contracts';

function options() {
  const args = process.argv.slice(2).filter((a, i) => !(i === 0 && a === '--'));
  const { values } = parseArgs({
    args,
    options: {
      tenant: { type: 'string' },
      project: { type: 'string' },
      durable: { type: 'string' },
      new: { type: 'boolean', default: false },
      nats: { type: 'string' },
    },
  });
  if (!values.tenant || !values.project) {
    console.error('usage: pnpm example:events -- --tenant <tenantId> --project <projectId> [--durable name] [--new] [--nats url]');
    process.exit(2);
  }
  const durable = values.durable ?? `event-printer-${values.tenant}-${values.project}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
  // NATS of `npm start` (scripts/infra.sh) unless told otherwise.
  const natsUrl = values.nats ?? process.env.NATS_URL ?? 'nats://127.0.0.1:14222';
  return { tenantId: values.tenant, projectId: values.project, durable, fromNow: values.new, natsUrl };
}

async function main() {
  const o = options();
  const nc = await connect({ servers: o.natsUrl, name: `event-printer:${o.durable}` });
  const sub = await subscribe(
    nc,
    eventCreated,
    { durable: o.durable, tenantId: o.tenantId, projectId: o.projectId, deliverPolicy: o.fromNow ? 'new' : 'all', concurrency: 1 },
    (e) => {
      const { event, dispatch } = e.data;
      process.stdout.write(JSON.stringify({ id: e.id, occurredAt: e.occurredAt, tenantId: e.tenantId, projectId: e.projectId, event, dispatch }) + '\n');
    },
  );
  console.error(`[event-printer] listening for event.created of ${o.tenantId}/${o.projectId} on ${o.natsUrl} (durable ${o.durable})`);
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
