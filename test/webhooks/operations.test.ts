import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  aProject,
  anApiKey,
  aTenantToken,
  client,
  eventually,
  projectPath,
  startReceiver,
  type Receiver,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { createDestination, deliveryLog, eventuallyLogged, signatureValid } from '../support/webhooks';

const closers: Array<() => Promise<void>> = [];

afterAll(async () => {
  await Promise.all(closers.map((c) => c()));
});

async function aReceiver(): Promise<Receiver> {
  const r = await startReceiver();
  closers.push(() => r.close());
  return r;
}

/**
 * A receiver that holds every request until `release()` (then answers 200), so a delivery stays pending for as long
 * as a test needs; answers queued with `respondWith` go first, at once.
 */
async function aHoldingReceiver() {
  const received: Array<{ webhookId: string; eventId: string | undefined }> = [];
  const held: http.ServerResponse[] = [];
  const answers: number[] = [];
  let holding = true;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let eventId: string | undefined;
      try {
        eventId = JSON.parse(Buffer.concat(chunks).toString('utf8'))?.data?.event?.id;
      } catch {
        eventId = undefined;
      }
      received.push({ webhookId: String(req.headers['webhook-id']), eventId });
      const answer = answers.shift();
      if (answer !== undefined) res.writeHead(answer).end();
      else if (holding) held.push(res);
      else res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(async () => {
    for (const res of held.splice(0)) res.writeHead(200).end();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    respondWith: (...statuses: number[]) => answers.push(...statuses),
    /** Waits until `n` requests are held. */
    heldCount: (n: number) =>
      eventually(async () => (held.length >= n ? true : undefined), `${n} held request(s)`, 20_000, 50),
    release() {
      holding = false;
      for (const res of held.splice(0)) res.writeHead(200).end();
    },
  };
}

/** A project with an API key and a function that posts a run event (→ one `event.created` delivery per destination). */
async function aProjectWithEvents() {
  const p = aProject();
  const { key } = await anApiKey(admin, p, { agentId: 'agent-a' });
  const run = client(stack.gatewayUrl, key);
  const postEvent = async (id: string) => {
    const res = await run.post('/run/v1/events', { id, type: 'page.viewed' });
    expect(res.status).toBe(201);
  };
  return { p, postEvent };
}

const path = (p: { tenantId: string; projectId: string }, destId: string) =>
  `${projectPath(p)}/webhook-destinations/${destId}`;
const finished = (d: { status: string }) => d.status !== 'pending';

describe('redeliver', () => {
  test('when a failed delivery is redelivered, then the receiver gets it again with the same webhook-id, freshly signed, and the log shows a manual attempt', async () => {
    const receiver = await aReceiver();
    receiver.respondWith(400);
    const { p, postEvent } = await aProjectWithEvents();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-redeliver');
    const failed = await eventuallyLogged(admin, p, dest.id, finished, 'the delivery failed');
    expect(failed).toMatchObject({ status: 'failed', attemptCount: 1, lastStatusCode: 400 });
    const [first] = receiver.received;

    const res = await admin.post(`${path(p, dest.id)}/deliveries/${failed.id}/redeliver`);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({
      id: failed.id,
      eventId: failed.eventId,
      status: expect.stringMatching(/^(pending|delivered)$/),
    });

    const [, again] = await receiver.waitFor((r) => r.headers['webhook-id'] === failed.id, 2);
    expect(again!.body).toBe(first!.body);
    expect(signatureValid(dest.secret, again!)).toBe(true);
    const delivered = await eventuallyLogged(
      admin,
      p,
      dest.id,
      (d) => d.id === failed.id && d.status === 'delivered',
      'the redelivery recorded',
    );
    expect(delivered.attempts).toEqual([
      expect.objectContaining({ attempt: 1, ok: false, statusCode: 400, manual: false }),
      expect.objectContaining({ attempt: 2, ok: true, statusCode: 200, manual: true }),
    ]);
    expect(delivered).toMatchObject({ attemptCount: 2, lastStatusCode: 200, lastError: null });

    // A delivered one can be asked for again too (a receiver that lost it): attempt 3, same webhook-id.
    const third = await admin.post(`${path(p, dest.id)}/deliveries/${failed.id}/redeliver`);
    expect(third.status).toBe(202);
    await receiver.waitFor((r) => r.headers['webhook-id'] === failed.id, 3);
    const log = await eventuallyLogged(
      admin,
      p,
      dest.id,
      (d) => d.id === failed.id && d.attemptCount === 3 && d.status === 'delivered',
      'the third attempt recorded',
    );
    expect(log.attempts.map((a) => a.manual)).toEqual([false, true, true]);
  });

  test('when a delivery is pending, then redeliver answers 409 and sends nothing more', async () => {
    const receiver = await aHoldingReceiver();
    receiver.respondWith(400);
    const { p, postEvent } = await aProjectWithEvents();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-pending');
    const failed = await eventuallyLogged(admin, p, dest.id, (d) => d.status === 'failed', 'the delivery failed');

    const first = await admin.post(`${path(p, dest.id)}/deliveries/${failed.id}/redeliver`);
    expect(first.status).toBe(202);
    expect(first.body.data).toMatchObject({ id: failed.id, status: 'pending' });
    // The manual attempt is with the receiver (held): the delivery is pending.
    await receiver.heldCount(1);
    const second = await admin.post(`${path(p, dest.id)}/deliveries/${failed.id}/redeliver`);
    expect(second.status).toBe(409);
    expect(second.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(second.body).toMatchObject({ status: 409, detail: expect.stringMatching(/pending/) });
    receiver.release();
    await eventuallyLogged(
      admin,
      p,
      dest.id,
      (d) => d.id === failed.id && d.status === 'delivered' && d.attemptCount === 2,
      'the manual attempt recorded',
    );
    expect(receiver.received.filter((r) => r.webhookId === failed.id)).toHaveLength(2);
  });

  test('when the delivery or the destination is unknown, then redeliver answers 404', async () => {
    const receiver = await aReceiver();
    const { p, postEvent } = await aProjectWithEvents();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    const other = await createDestination(admin, p, { url: receiver.url, eventTypes: ['feedback.created'] });
    await postEvent('evt-404');
    const d = await eventuallyLogged(admin, p, dest.id, finished, 'the delivery recorded');
    const unknown = await admin.post(`${path(p, dest.id)}/deliveries/msg_unknown/redeliver`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ status: 404, detail: 'Webhook delivery not found' });
    // A delivery of another destination is not found through this one.
    expect((await admin.post(`${path(p, other.id)}/deliveries/${d.id}/redeliver`)).status).toBe(404);
    expect((await admin.post(`${path(p, 'nope')}/deliveries/${d.id}/redeliver`)).status).toBe(404);
    expect(receiver.received.filter((r) => r.headers['webhook-id'] === d.id)).toHaveLength(1);
  });
});

describe('recover', () => {
  test('when recover is called for a window, then every failed or cancelled delivery created in it is sent once, and a second call while they are pending queues none', async () => {
    const receiver = await aHoldingReceiver();
    const { p, postEvent } = await aProjectWithEvents();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    receiver.respondWith(400, 400, 400);
    const since = new Date(Date.now() - 60_000).toISOString();
    for (const id of ['evt-r1', 'evt-r2', 'evt-r3']) {
      await postEvent(id);
      await eventuallyLogged(
        admin,
        p,
        dest.id,
        (d) =>
          d.eventId !== undefined &&
          d.status === 'failed' &&
          receiver.received.some((r) => r.eventId === id && r.webhookId === d.id),
        `${id} failed`,
      );
    }
    receiver.respondWith(200);
    await postEvent('evt-ok');
    await eventually(
      async () =>
        (await deliveryLog(admin, p, dest.id)).filter((d) => d.status === 'delivered').length === 1 || undefined,
      'the good one delivered',
    );
    const failedIds = (await deliveryLog(admin, p, dest.id, '?status=failed')).map((d) => d.id).sort();
    expect(failedIds).toHaveLength(3);

    const first = await admin.post(`${path(p, dest.id)}/recover`, { since });
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ data: { scheduled: 3, more: false } });
    await receiver.heldCount(3);
    // While those are pending (held by the receiver), recovering again queues nothing.
    const second = await admin.post(`${path(p, dest.id)}/recover`, { since });
    expect(second.status).toBe(202);
    expect(second.body.data).toEqual({ scheduled: 0, more: false });
    receiver.release();
    await eventually(
      async () => ((await deliveryLog(admin, p, dest.id, '?status=delivered')).length === 4 ? true : undefined),
      'all four delivered',
    );
    const resent = receiver.received.filter((r) => failedIds.includes(r.webhookId)).map((r) => r.webhookId);
    // Each failed delivery: its first attempt and exactly one recovered attempt, with its own webhook-id.
    expect(resent.sort()).toEqual([...failedIds, ...failedIds].sort());
    for (const d of await deliveryLog(admin, p, dest.id, '?status=delivered')) {
      if (failedIds.includes(d.id)) expect(d.attempts.map((a) => a.manual)).toEqual([false, true]);
    }
    // Delivered now: nothing left to recover.
    expect((await admin.post(`${path(p, dest.id)}/recover`, { since })).body.data).toEqual({
      scheduled: 0,
      more: false,
    });
  });

  test('when the window is before the deliveries, then nothing is queued', async () => {
    const receiver = await aReceiver();
    receiver.respondWith(400);
    const { p, postEvent } = await aProjectWithEvents();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-window');
    await eventuallyLogged(admin, p, dest.id, (d) => d.status === 'failed', 'the delivery failed');
    const until = new Date(Date.now() - 3600_000).toISOString();
    const res = await admin.post(`${path(p, dest.id)}/recover`, {
      since: new Date(Date.now() - 7200_000).toISOString(),
      until,
    });
    expect(res.status).toBe(202);
    expect(res.body.data).toEqual({ scheduled: 0, more: false });
    expect(receiver.received).toHaveLength(1);
  });

  test('when since is missing, malformed or further back than the log keeps deliveries, then recover is refused and queues nothing', async () => {
    const receiver = await aReceiver();
    receiver.respondWith(400);
    const { p, postEvent } = await aProjectWithEvents();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-refused');
    await eventuallyLogged(admin, p, dest.id, (d) => d.status === 'failed', 'the delivery failed');

    const missing = await admin.post(`${path(p, dest.id)}/recover`, {});
    expect([400, 422]).toContain(missing.status);
    expect(missing.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect([400, 422]).toContain((await admin.post(`${path(p, dest.id)}/recover`, { since: 'yesterday' })).status);
    const backwards = await admin.post(`${path(p, dest.id)}/recover`, {
      since: new Date().toISOString(),
      until: new Date(Date.now() - 60_000).toISOString(),
    });
    expect([400, 422]).toContain(backwards.status);
    const old = await admin.post(`${path(p, dest.id)}/recover`, {
      since: new Date(Date.now() - 31 * 86_400_000).toISOString(),
    });
    expect(old.status).toBe(422);
    expect(old.body.detail).toMatch(/further back than the delivery log keeps deliveries \(30 days\)/);
    expect((await admin.post(`${path(p, 'nope')}/recover`, { since: new Date().toISOString() })).status).toBe(404);
    expect(receiver.received).toHaveLength(1);
    expect((await deliveryLog(admin, p, dest.id))[0]).toMatchObject({ status: 'failed', attemptCount: 1 });
  });
});

describe('stats', () => {
  test('when a destination has had a known mix of outcomes, then its stats count them by status with the success rate and attempt percentiles', async () => {
    const receiver = await aReceiver();
    const { p, postEvent } = await aProjectWithEvents();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    const empty = await admin.get(`${path(p, dest.id)}/stats`);
    expect(empty.status).toBe(200);
    expect(empty.body.data.lastHour).toEqual({
      counts: { delivered: 0, failed: 0, pending: 0, cancelled: 0 },
      successRate: null,
      attempts: 0,
      attemptDurationMs: { p50: null, p99: null },
    });

    // Two delivered at once, one refused (400: failed after 1 attempt), one failing every attempt (500: 4 attempts).
    const outcomes: Array<[string, number[], string]> = [
      ['evt-s1', [], 'delivered'],
      ['evt-s2', [], 'delivered'],
      ['evt-s3', [400], 'failed'],
      ['evt-s4', [500, 500, 500, 500], 'failed'],
    ];
    for (const [id, answers, status] of outcomes) {
      receiver.respondWith(...answers);
      await postEvent(id);
      await eventually(
        async () =>
          (await deliveryLog(admin, p, dest.id, '?limit=100')).find(
            (d) =>
              d.status === status &&
              receiver.received.some((r) => r.json?.data?.event?.id === id && r.headers['webhook-id'] === d.id),
          ),
        `${id} ${status}`,
        20_000,
        150,
      );
    }
    const stats = await eventually(
      async () => {
        const res = await admin.get(`${path(p, dest.id)}/stats`);
        return res.body.data.lastHour.attempts === 7 && res.body.data.lastHour.counts.failed === 2
          ? res.body.data
          : undefined;
      },
      'the counters written',
      20_000,
      200,
    );
    for (const w of [stats.lastHour, stats.lastDay, stats.lastWeek]) {
      expect(w).toMatchObject({
        counts: { delivered: 2, failed: 2, pending: 0, cancelled: 0 },
        successRate: 0.5,
        attempts: 7,
      });
      expect(w.attemptDurationMs.p50).toEqual(expect.any(Number));
      expect(w.attemptDurationMs.p99).toBeGreaterThanOrEqual(w.attemptDurationMs.p50);
    }
    expect(stats.destinationId).toBe(dest.id);

    // A redelivered failure that succeeds moves one count from failed to delivered and adds its attempt.
    const [refused] = await deliveryLog(admin, p, dest.id, '?status=failed&limit=100').then((l) =>
      l.filter((d) => d.attemptCount === 1),
    );
    expect((await admin.post(`${path(p, dest.id)}/deliveries/${refused!.id}/redeliver`)).status).toBe(202);
    const after = await eventually(
      async () => {
        const res = await admin.get(`${path(p, dest.id)}/stats`);
        return res.body.data.lastHour.attempts === 8 && res.body.data.lastHour.counts.delivered === 3
          ? res.body.data
          : undefined;
      },
      'the redelivery counted',
      20_000,
      200,
    );
    expect(after.lastHour).toMatchObject({
      counts: { delivered: 3, failed: 1, pending: 0, cancelled: 0 },
      successRate: 0.75,
      attempts: 8,
    });
  });

  test('when the destination is unknown, then stats answer 404', async () => {
    const p = aProject();
    const res = await admin.get(`${path(p, 'nope')}/stats`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
  });
});

describe('tenant isolation', () => {
  test("when another tenant's credential calls redeliver, recover or stats on a destination, then it is refused and nothing is sent", async () => {
    const receiver = await aReceiver();
    receiver.respondWith(400);
    const { p, postEvent } = await aProjectWithEvents();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-iso');
    const d = await eventuallyLogged(admin, p, dest.id, (x) => x.status === 'failed', 'the delivery failed');

    const other = aProject();
    const intruder = client(stack.gatewayUrl, await aTenantToken(admin, other.tenantId, 'admin'));
    expect([403, 404]).toContain((await intruder.post(`${path(p, dest.id)}/deliveries/${d.id}/redeliver`)).status);
    expect([403, 404]).toContain(
      (await intruder.post(`${path(p, dest.id)}/recover`, { since: new Date(Date.now() - 60_000).toISOString() }))
        .status,
    );
    expect([403, 404]).toContain((await intruder.get(`${path(p, dest.id)}/stats`)).status);
    // Its own tenant and project in the path, our destination and delivery ids: not found there.
    expect((await intruder.post(`${path(other, dest.id)}/deliveries/${d.id}/redeliver`)).status).toBe(404);
    expect((await intruder.get(`${path(other, dest.id)}/stats`)).status).toBe(404);
    // A viewer of the tenant may read stats but not redeliver.
    const viewer = client(stack.gatewayUrl, await aTenantToken(admin, p.tenantId, 'viewer'));
    expect((await viewer.get(`${path(p, dest.id)}/stats`)).status).toBe(200);
    expect((await viewer.post(`${path(p, dest.id)}/deliveries/${d.id}/redeliver`)).status).toBe(403);

    expect(receiver.received).toHaveLength(1);
    expect((await deliveryLog(admin, p, dest.id))[0]).toMatchObject({ id: d.id, status: 'failed', attemptCount: 1 });
  });
});
