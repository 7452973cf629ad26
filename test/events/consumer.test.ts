import { publisher } from '@platform/bus';
import { PLATFORM_EVENTS_STREAM, eventCreated, eventSubject, pendingEvent, type RunEvent } from '@platform/contracts';
import type { EventOf } from '@platform/consumer';
import { aProject, aRunEvent, eventually, testStack, uniqueId } from '@platform/testkit';
import { adminNats } from '../support/connections';

/** libs/consumer against the test stack's NATS: the typed durable consumer internal services build on. */
const stack = testStack();
const nats = adminNats(stack);

const durable = () => uniqueId('consumer-test').replace(/\./g, '_');

async function publishCreated(p: { tenantId: string; projectId: string }, event = aRunEvent(p)) {
  const e = pendingEvent(eventCreated, uniqueId('id'), p, { event, dispatch: false });
  await publisher(nats.nc).publishPending([e]);
  return e;
}

async function pendingOf(name: string) {
  const info = await (await nats.nc.jetstreamManager()).consumers.info(PLATFORM_EVENTS_STREAM, name);
  return info.num_ack_pending + info.num_pending;
}

describe('the typed event consumer (libs/consumer)', () => {
  test('when events of two projects are published, then a project subscription gets only its own, typed, and a tenant subscription gets both', async () => {
    const a = aProject();
    const b = { tenantId: a.tenantId, projectId: aProject().projectId };
    const other = aProject();
    const ofA: Array<EventOf<typeof eventCreated>> = [];
    const ofTenant: string[] = [];
    await nats.subscribe(
      eventCreated,
      { durable: durable(), tenantId: a.tenantId, projectId: a.projectId },
      (e) => void ofA.push(e),
    );
    await nats.subscribe(
      eventCreated,
      { durable: durable(), tenantId: a.tenantId },
      (e) => void ofTenant.push(e.data.event.id),
    );

    const sentA = await publishCreated(a);
    const sentB = await publishCreated(b);
    const sentOther = await publishCreated(other);

    await eventually(() => ofTenant.length === 2, 'both events of the tenant');
    expect(ofTenant.sort()).toEqual(
      [sentA.envelope.data, sentB.envelope.data].map((d) => (d as { event: RunEvent }).event.id).sort(),
    );
    await eventually(() => ofA.length === 1, 'the event of project a');
    expect(ofA[0]).toEqual(sentA.envelope);
    expect(ofA[0]!.data.event.projectId).toBe(a.projectId);
    expect(JSON.stringify([ofA, ofTenant])).not.toContain(sentOther.id);
  });

  test('when the handler fails, then the event is redelivered and acknowledged only after the handler succeeds', async () => {
    const p = aProject();
    const name = durable();
    const attempts: string[] = [];
    await nats.subscribe(
      eventCreated,
      { durable: name, tenantId: p.tenantId, projectId: p.projectId, retryDelayMs: 100 },
      (e) => {
        attempts.push(e.id);
        if (attempts.length < 3) throw new Error('our database is down');
      },
    );
    const sent = await publishCreated(p);
    await eventually(() => attempts.length >= 3, 'three attempts');
    expect(new Set(attempts)).toEqual(new Set([sent.id]));
    await eventually(async () => (await pendingOf(name)) === 0, 'the event acknowledged');
    expect(attempts).toHaveLength(3);
  });

  test('when a payload does not match the declaration, then it is terminated (never redelivered) and the events behind it are still handled', async () => {
    const p = aProject();
    const name = durable();
    const seen: string[] = [];
    await nats.subscribe(
      eventCreated,
      { durable: name, tenantId: p.tenantId, projectId: p.projectId, concurrency: 1, retryDelayMs: 100 },
      (e) => void seen.push(e.id),
    );
    const pub = publisher(nats.nc);
    const subject = eventSubject(eventCreated, p.tenantId, p.projectId);
    const bad = {
      ...pendingEvent(eventCreated, uniqueId('bad'), p, { event: { id: 'missing-fields' }, dispatch: 'yes' }),
    };
    await pub.publish(subject, bad.envelope, bad.id);
    await nats.nc.jetstream().publish(subject, new TextEncoder().encode('not json'), { msgID: uniqueId('raw') });
    const good = await publishCreated(p);

    await eventually(() => seen.includes(good.id), 'the valid event behind the invalid ones');
    await eventually(async () => (await pendingOf(name)) === 0, 'nothing left pending or unacknowledged');
    expect(seen).toEqual([good.id]);
  });

  test('when a projectId is given without its tenantId, then subscribe refuses it', async () => {
    await expect(
      nats.subscribe(eventCreated, { durable: durable(), projectId: 'p1' }, () => undefined),
    ).rejects.toThrow(/projectId needs tenantId/);
  });
});
