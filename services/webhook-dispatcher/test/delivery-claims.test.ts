import { connectMongo, type Connection } from '@platform/mongo';
import type { OutboxRelay } from '@platform/outbox';
import { dropDatabases, ensureInfra } from '@platform/testkit';
import { deliveryClaimModel } from '../src/data/delivery.model';
import { deliveryRepo } from '../src/data/delivery.repo';

/**
 * Claims of due deliveries against the real database. A claim is the insert of a claim record `<id>@<due time>`,
 * then the lease is written on the delivery: a dispatcher SIGKILLed between the two must not leave the delivery
 * unclaimable for good (found by `pnpm chaos`: one delivery of 600 never went out after a dispatcher kill).
 */
const LEASE_MS = 30_000;
const prefix = `claims${Date.now().toString(36)}`;
let db: Connection;
const partition = 'claims-test';
const noOutbox = (): never => {
  throw new Error('no outbox in this test');
};
const noRelay: OutboxRelay = { flush: noOutbox, exclusive: noOutbox, sweep: noOutbox, stop: noOutbox };

beforeAll(async () => {
  db = await connectMongo({ url: ensureInfra().MONGO_URL, dbPrefix: prefix, service: 'webhook-dispatcher' });
});
afterAll(async () => {
  await db?.close();
  await dropDatabases(ensureInfra().MONGO_URL, prefix).catch(() => undefined);
});

async function aDueDelivery(id: string) {
  const repo = deliveryRepo(db, partition, noRelay);
  const due = new Date(Date.now() - 1000);
  await repo.schedule([{ _id: id, tenantId: 't1', projectId: 'p1', destinationId: `d-${id}`, eventId: `e-${id}`, eventType: 'event.created', body: '{}' }], due);
  return { repo, due };
}

test('when a claimer died between its claim record and the lease, then after a lease the delivery is claimed by another worker', async () => {
  const id = `msg_dead_${Date.now().toString(36)}`;
  const { repo, due } = await aDueDelivery(id);
  // The dead claimer's record, older than a lease; the delivery is still due at the same time.
  await deliveryClaimModel(db).create({ _id: `${id}@${due.getTime()}`, deliveryId: id, createdAt: new Date(Date.now() - 2 * LEASE_MS) });
  const claimed = await repo.claimDue('worker-b', LEASE_MS);
  expect(claimed).toMatchObject({ _id: id, claimToken: 'worker-b' });
});

test('when another worker claimed a delivery moments ago, then it is not claimed a second time', async () => {
  const id = `msg_live_${Date.now().toString(36)}`;
  const { due } = await aDueDelivery(id);
  await deliveryClaimModel(db).create({ _id: `${id}@${due.getTime()}`, deliveryId: id, createdAt: new Date() });
  // A fresh repo (another replica, no cached candidates), restricted to this delivery's partition.
  const other = deliveryRepo(db, partition, noRelay);
  let got = await other.claimDue('worker-c', LEASE_MS);
  // Earlier tests' deliveries are claimed or done already; nothing else is due in this partition.
  while (got && got._id !== id) got = await other.claimDue('worker-c', LEASE_MS);
  expect(got).toBeNull();
});
