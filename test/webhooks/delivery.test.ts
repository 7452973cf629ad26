import { conversationCreated, evaluationFailed, feedbackCreated } from '@platform/contracts';
import { aProject, anApiKey, client, eventually, projectPath, startReceiver, type Receiver } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import {
  createDestination,
  deliveryLog,
  eventPublisher,
  eventuallyLogged,
  signatureValid,
  verifyDelivery,
} from '../support/webhooks';

const receivers: Receiver[] = [];
let events: Awaited<ReturnType<typeof eventPublisher>>;

async function aReceiver() {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

beforeAll(async () => {
  events = await eventPublisher(stack.env.NATS_URL!);
});
afterAll(async () => {
  await events.close();
  await Promise.all(receivers.map((r) => r.close()));
});

/** A project with an API key for `agentId`, and a function that posts a run event (→ event.created). */
async function aProjectWithKey(agentId = 'agent-a') {
  const p = aProject();
  const { key } = await anApiKey(admin, p, { agentId });
  const run = client(stack.gatewayUrl, key);
  const postEvent = async (id: string) => {
    const res = await run.post('/run/v1/events', { id, type: 'page.viewed' });
    expect(res.status).toBe(201);
    return res.body.data;
  };
  return { p, postEvent };
}

/**
 * Requests for one event from this run's dispatcher. The database is shared with other test runs on the machine,
 * whose outbox sweeps may relay our events into their own stacks; their dispatchers cannot sign for our
 * destinations (another ENCRYPTION_KEY), so our deliveries are the ones that carry the Standard Webhooks headers.
 */
const forEvent = (id: string) => (r: { json?: any; headers: Record<string, unknown> }) =>
  r.json?.data?.event?.id === id && typeof r.headers['webhook-id'] === 'string';

describe('webhook signing and payloads', () => {
  test('when a destination is created, then its signing secret is shown once and every delivery verifies with the standardwebhooks library', async () => {
    const receiver = await aReceiver();
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, {
      url: receiver.url,
      eventTypes: ['event.created'],
      headers: { 'X-Team': 'blue', 'User-Agent': 'mine' },
    });
    expect(dest.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(dest).toMatchObject({ enabled: true, disabledReason: null });

    const read = await admin.get(`${projectPath(p)}/webhook-destinations/${dest.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).not.toHaveProperty('secret');
    const listed = await admin.get(`${projectPath(p)}/webhook-destinations`);
    expect(listed.body.data[0]).not.toHaveProperty('secret');

    const event = await postEvent('evt-signed');
    const [delivery] = await receiver.waitFor(forEvent('evt-signed'));
    expect(verifyDelivery(dest.secret, delivery!)).toEqual({
      type: 'event.created',
      timestamp: expect.any(String),
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: 'agent-a',
      data: { event },
    });
    expect(delivery!.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(delivery!.headers['x-team']).toBe('blue');
    expect(delivery!.headers['user-agent']).toBe('Platform-Webhooks/1.0');
    expect(delivery!.headers['content-type']).toBe('application/json');

    // The attempt is recorded just after the receiver answered it.
    const logged = await eventually(
      async () => (await deliveryLog(admin, p, dest.id)).find((d) => d.status !== 'pending'),
      'the delivery recorded',
    );
    expect(logged).toMatchObject({
      id: delivery!.headers['webhook-id'],
      eventType: 'event.created',
      status: 'delivered',
      attemptCount: 1,
      nextAttemptAt: null,
    });
  });

  test('when the secret is rotated, then deliveries carry both signatures during the grace period and only the new one without it', async () => {
    const receiver = await aReceiver();
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });

    const rotated = await admin.post(`${projectPath(p)}/webhook-destinations/${dest.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.data).toMatchObject({
      id: dest.id,
      secret: expect.stringMatching(/^whsec_/),
      previousSecretExpiresAt: expect.any(String),
    });
    const second = rotated.body.data.secret as string;
    expect(second).not.toBe(dest.secret);

    await postEvent('evt-grace');
    const [graced] = await receiver.waitFor(forEvent('evt-grace'));
    expect(signatureValid(dest.secret, graced!)).toBe(true);
    expect(signatureValid(second, graced!)).toBe(true);

    const again = await admin.post(`${projectPath(p)}/webhook-destinations/${dest.id}/rotate-secret`, {
      graceSeconds: 0,
    });
    expect(again.status).toBe(200);
    expect(again.body.data.previousSecretExpiresAt).toBeNull();
    const third = again.body.data.secret as string;
    await postEvent('evt-no-grace');
    const [plain] = await receiver.waitFor(forEvent('evt-no-grace'));
    expect(signatureValid(third, plain!)).toBe(true);
    expect(signatureValid(second, plain!)).toBe(false);
    expect(signatureValid(dest.secret, plain!)).toBe(false);

    const bad = await admin.post(`${projectPath(p)}/webhook-destinations/${dest.id}/rotate-secret`, {
      graceSeconds: -1,
    });
    expect(bad.status).toBe(400);
    const missing = await admin.post(`${projectPath(p)}/webhook-destinations/nope/rotate-secret`);
    expect(missing.status).toBe(404);
  });
});

describe('webhook retries', () => {
  test('when the receiver fails twice and then succeeds, then it gets three attempts with one webhook-id and valid signatures', async () => {
    const receiver = await aReceiver();
    receiver.respondWith(500, 503);
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-retry');

    const attempts = await receiver.waitFor(forEvent('evt-retry'), 3);
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    for (const a of attempts) expect(signatureValid(dest.secret, a)).toBe(true);

    const logged = await eventuallyLogged(
      admin,
      p,
      dest.id,
      (d) => d.status === 'delivered',
      'the delivery recorded as delivered',
    );
    expect(logged).toMatchObject({
      id: attempts[0]!.headers['webhook-id'],
      attemptCount: 3,
      lastStatusCode: 200,
      nextAttemptAt: null,
    });
    expect(logged.attempts.map((a) => [a.attempt, a.statusCode, a.ok])).toEqual([
      [1, 500, false],
      [2, 503, false],
      [3, 200, true],
    ]);
    expect(logged.attempts[0]!.error).toMatch(/answered 500/);
    expect(await receiver.waitFor(forEvent('evt-retry'), 3)).toHaveLength(3);
  });

  test('when the receiver answers 429 with Retry-After, then the delivery is retried and delivered', async () => {
    const receiver = await aReceiver();
    receiver.respondWith({ status: 429, headers: { 'retry-after': '0' } });
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-429');
    await receiver.waitFor(forEvent('evt-429'), 2);
    const logged = await eventuallyLogged(admin, p, dest.id, (d) => d.status === 'delivered', 'delivered after a 429');
    expect(logged.attempts.map((a) => a.statusCode)).toEqual([429, 200]);
  });

  test('when the receiver keeps failing, then the schedule runs out and the delivery is failed with its attempts listed', async () => {
    const receiver = await aReceiver();
    receiver.respondAlways(500);
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-exhaust');
    const logged = await eventuallyLogged(
      admin,
      p,
      dest.id,
      (d) => d.status === 'failed',
      'the delivery failed for good',
    );
    // the test stack's schedule is 200,400,800 ms: four attempts
    expect(logged).toMatchObject({
      attemptCount: 4,
      nextAttemptAt: null,
      lastStatusCode: 500,
      lastError: expect.stringMatching(/no attempts left/),
    });
    expect(receiver.received.filter(forEvent('evt-exhaust'))).toHaveLength(4);
  });

  test('when the receiver answers 400, then the delivery is not retried', async () => {
    const receiver = await aReceiver();
    receiver.respondWith(400);
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-400');
    const logged = await eventuallyLogged(admin, p, dest.id, (d) => d.status === 'failed', 'a failed delivery');
    expect(logged).toMatchObject({ attemptCount: 1, lastStatusCode: 400 });
  });

  test('when the receiver answers 410 Gone, then the destination is disabled with a reason and gets nothing more', async () => {
    const receiver = await aReceiver();
    const witness = await aReceiver();
    receiver.respondWith(410);
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    await postEvent('evt-gone');

    const disabled = await eventually(async () => {
      const res = await admin.get(`${projectPath(p)}/webhook-destinations/${dest.id}`);
      return res.body.data.enabled === false ? res.body.data : undefined;
    }, 'the destination to be disabled');
    expect(disabled.disabledReason).toMatch(/410 Gone/);
    const logged = await eventuallyLogged(admin, p, dest.id, (d) => d.status === 'failed', 'the 410 delivery');
    expect(logged).toMatchObject({ status: 'failed', attemptCount: 1, lastStatusCode: 410 });

    // a later event reaches another destination of the project, but not the disabled one
    await createDestination(admin, p, { url: witness.url, eventTypes: ['event.created'] });
    await postEvent('evt-after-gone');
    await witness.waitFor(forEvent('evt-after-gone'));
    expect(receiver.received.filter(forEvent('evt-after-gone'))).toHaveLength(0);

    // enabling it again clears the reason
    const enabled = await admin.patch(`${projectPath(p)}/webhook-destinations/${dest.id}`, { enabled: true });
    expect(enabled.body.data).toMatchObject({ enabled: true, disabledReason: null });
  });
});

describe('webhook address safety on the shared stack (loopback allowed for tests)', () => {
  test('when the receiver redirects, then the redirect is not followed', async () => {
    const target = await aReceiver();
    const redirecting = await aReceiver();
    redirecting.respondAlways({ status: 302, headers: { location: target.url } });
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, { url: redirecting.url, eventTypes: ['event.created'] });
    await postEvent('evt-redirect');
    const logged = await eventuallyLogged(
      admin,
      p,
      dest.id,
      (d) => d.status === 'failed',
      'the redirect answer recorded',
    );
    expect(logged).toMatchObject({
      attemptCount: 1,
      lastStatusCode: 302,
      lastError: expect.stringMatching(/redirects are not followed/),
    });
    expect(target.received).toHaveLength(0);
  });

  test.each([
    'http://10.0.0.1/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::ffff:127.0.0.1]/',
    'http://0300.0250.0.1/',
    'http://100.64.0.1/',
  ])('when a destination URL is the unsafe literal %s, then create answers 422 and stores nothing', async (url) => {
    const p = aProject();
    const res = await admin.post(`${projectPath(p)}/webhook-destinations`, {
      name: 'bad',
      url,
      eventTypes: ['event.created'],
    });
    expect(res.status).toBe(422);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/url' })]);
    const list = await admin.get(`${projectPath(p)}/webhook-destinations`);
    expect(list.body.data).toEqual([]);
  });

  test('when a destination is changed to an unsafe literal URL, then the update answers 422 and the URL stays', async () => {
    const receiver = await aReceiver();
    const p = aProject();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    const res = await admin.patch(`${projectPath(p)}/webhook-destinations/${dest.id}`, {
      url: 'http://192.168.1.10/x',
    });
    expect(res.status).toBe(422);
    const read = await admin.get(`${projectPath(p)}/webhook-destinations/${dest.id}`);
    expect(read.body.data.url).toBe(receiver.url);
  });
});

describe('webhook event families', () => {
  test('when feedback, evaluation and conversation events are published, then destinations get them by type, agent and evaluator scope, and disabled ones get nothing', async () => {
    const receiver = await aReceiver();
    const disabledReceiver = await aReceiver();
    const p = aProject();
    const dest = await createDestination(admin, p, {
      url: receiver.url,
      eventTypes: ['feedback.created', 'evaluation.failed', 'conversation.created'],
      agentIds: ['agent-x'],
      evaluatorIds: ['ev-1'],
    });
    await createDestination(admin, p, {
      url: disabledReceiver.url,
      enabled: false,
      eventTypes: ['feedback.created', 'evaluation.failed', 'conversation.created', 'event.created'],
    });

    const feedback = {
      id: 'fb-1',
      conversationId: 'conv-1',
      type: 'negative',
      details: 'wrong answer',
      agentId: 'agent-x',
      createdAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
    };
    const evaluation = (evaluatorId: string, agentId: string) => ({
      evaluator: { id: evaluatorId, name: `Evaluator ${evaluatorId}` },
      conversation: { id: 'conv-1', agentId },
      failedConditions: [{ field: 'score', operator: '>=', value: 3, actual: 1 }],
      resultId: `res-${evaluatorId}-${agentId}`,
    });
    await events.publish(evaluationFailed, p, evaluation('ev-2', 'agent-x'));
    await events.publish(conversationCreated, p, { conversation: { id: 'conv-other', agentId: 'agent-y' } });
    await events.publish(feedbackCreated, p, { feedback: { ...feedback, id: 'fb-other', agentId: 'agent-y' } });
    await events.publish(feedbackCreated, p, { feedback });
    await events.publish(evaluationFailed, p, evaluation('ev-1', 'agent-x'));
    await events.publish(conversationCreated, p, {
      conversation: { id: 'conv-1', agentId: 'agent-x' },
      agentName: 'Support bot',
    });

    const byType = (type: string) => (r: { json?: any }) => r.json?.type === type;
    const [fb] = await receiver.waitFor(byType('feedback.created'));
    expect(verifyDelivery(dest.secret, fb!)).toMatchObject({
      type: 'feedback.created',
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: 'agent-x',
      data: { feedback: { id: 'fb-1' } },
    });
    const [ev] = await receiver.waitFor(byType('evaluation.failed'));
    expect(ev!.json).toMatchObject({
      agentId: 'agent-x',
      data: { evaluator: { id: 'ev-1' }, failedConditions: [{ field: 'score' }] },
    });
    const [conv] = await receiver.waitFor(byType('conversation.created'));
    expect(conv!.json).toMatchObject({
      agentId: 'agent-x',
      agentName: 'Support bot',
      data: { conversation: { id: 'conv-1' } },
    });

    // out-of-scope events were published first on the same subjects; later ones of the same types arrived, so these were skipped
    await events.publish(evaluationFailed, p, evaluation('ev-1', 'agent-x'), 'sentinel-eval');
    await events.publish(feedbackCreated, p, { feedback: { ...feedback, id: 'fb-sentinel' } });
    await events.publish(conversationCreated, p, { conversation: { id: 'conv-sentinel', agentId: 'agent-x' } });
    await receiver.waitFor(byType('evaluation.failed'), 2);
    await receiver.waitFor((r) => r.json?.data?.feedback?.id === 'fb-sentinel');
    await receiver.waitFor((r) => r.json?.data?.conversation?.id === 'conv-sentinel');
    expect(receiver.received.filter((r) => r.json?.data?.evaluator?.id === 'ev-2')).toHaveLength(0);
    expect(receiver.received.filter((r) => r.json?.data?.conversation?.id === 'conv-other')).toHaveLength(0);
    expect(receiver.received.filter((r) => r.json?.data?.feedback?.id === 'fb-other')).toHaveLength(0);
    expect(disabledReceiver.received).toHaveLength(0);
  });

  test('when a destination is created or switched off, then the very next event of its project sees the change', async () => {
    const first = await aReceiver();
    const second = await aReceiver();
    const p = aProject();
    const feedback = (id: string) => ({
      feedback: {
        id,
        conversationId: 'conv-1',
        type: 'positive',
        details: null,
        agentId: 'agent-x',
        createdAt: new Date().toISOString(),
        updatedAt: new Date().toISOString(),
      },
    });
    const byFeedback = (id: string) => (r: { json?: any }) => r.json?.data?.feedback?.id === id;
    const a = await createDestination(admin, p, { url: first.url, eventTypes: ['feedback.created'] });
    // The dispatcher now knows the project's destinations (only the first).
    await events.publish(feedbackCreated, p, feedback('fb-before'));
    await first.waitFor(byFeedback('fb-before'));

    // Published the moment the create answered, straight onto the stream: the dispatcher must not use its older list.
    await createDestination(admin, p, { url: second.url, eventTypes: ['feedback.created'] });
    await events.publish(feedbackCreated, p, feedback('fb-after-create'));
    await second.waitFor(byFeedback('fb-after-create'));

    const off = await admin.patch(`${projectPath(p)}/webhook-destinations/${a.id}`, { enabled: false });
    expect(off.status).toBe(200);
    await events.publish(feedbackCreated, p, feedback('fb-after-disable'));
    // Had the dispatcher used its older list, both would have been sent the event at the same moment.
    await second.waitFor(byFeedback('fb-after-disable'));
    expect(first.received.filter(byFeedback('fb-after-disable'))).toHaveLength(0);
  });

  test('when a destination posts to a chat channel and the chat app cannot take it, then each attempt is recorded with the reason and retried', async () => {
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, { chatappChannelId: 'C0TEST', eventTypes: ['event.created'] });
    await postEvent('evt-chat');
    const logged = await eventuallyLogged(admin, p, dest.id, (d) => d.attemptCount >= 2, 'a retried chat delivery');
    for (const a of logged.attempts) {
      expect(a.ok).toBe(false);
      expect(a.error).toMatch(/chat app/);
    }
  });
});

describe('test deliveries and the delivery log', () => {
  test('when a test event is sent, then the receiver gets a signed `test` delivery and the outcome is answered and logged', async () => {
    const receiver = await aReceiver();
    const p = aProject();
    const dest = await createDestination(admin, p, {
      url: receiver.url,
      eventTypes: ['event.created'],
      enabled: false,
    });
    const res = await admin.post(`${projectPath(p)}/webhook-destinations/${dest.id}/test`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      success: true,
      statusCode: 200,
      error: null,
      deliveryId: expect.stringMatching(/^msg_/),
    });
    const [got] = await receiver.waitFor((r) => r.json?.type === 'test');
    expect(verifyDelivery(dest.secret, got!)).toMatchObject({
      type: 'test',
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: null,
      data: { test: { destinationId: dest.id } },
    });
    expect(got!.headers['webhook-id']).toBe(res.body.data.deliveryId);

    receiver.respondWith(500);
    const failed = await admin.post(`${projectPath(p)}/webhook-destinations/${dest.id}/test`);
    expect(failed.status).toBe(200);
    expect(failed.body.data).toMatchObject({ success: false, statusCode: 500, error: expect.stringMatching(/500/) });

    const log = await deliveryLog(admin, p, dest.id, '?eventType=test');
    expect(log.map((d) => d.status).sort()).toEqual(['delivered', 'failed']);
    const page = await admin.get(`${projectPath(p)}/webhook-destinations/${dest.id}/deliveries?limit=1&page=2`);
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.pagination).toMatchObject({ page: 2, limit: 1, total: 2, pages: 2 });
    const onlyFailed = await deliveryLog(admin, p, dest.id, '?status=failed');
    expect(onlyFailed).toHaveLength(1);
  });

  test('when run events are delivered, then each delivery shows the run event id and the log can be narrowed to one run event', async () => {
    const receiver = await aReceiver();
    const { p, postEvent } = await aProjectWithKey();
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    const first = await postEvent('evt-find-me');
    await postEvent('evt-other');
    await receiver.waitFor(forEvent('evt-find-me'));
    await receiver.waitFor(forEvent('evt-other'));
    const all = await eventually(async () => {
      const log = await deliveryLog(admin, p, dest.id);
      return log.length === 2 && log.every((d) => d.status !== 'pending') ? log : undefined;
    }, 'both deliveries recorded');
    expect(all.map((d) => d.runEventId).sort()).toEqual(['evt-find-me', 'evt-other']);
    // The platform event id is another id: a user could not find the delivery by the id they posted before.
    expect(all.every((d) => d.eventId !== d.runEventId)).toBe(true);

    const mine = await deliveryLog(admin, p, dest.id, `?runEventId=${first.id}`);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ runEventId: 'evt-find-me', eventType: 'event.created', status: 'delivered' });
    await expect(deliveryLog(admin, p, dest.id, '?runEventId=evt-never-posted')).resolves.toEqual([]);

    // Deliveries of other event types carry no run event id.
    expect((await admin.post(`${projectPath(p)}/webhook-destinations/${dest.id}/test`)).status).toBe(200);
    const tests = await deliveryLog(admin, p, dest.id, '?eventType=test');
    expect(tests[0]).toMatchObject({ runEventId: null });

    const bad = await admin.get(`${projectPath(p)}/webhook-destinations/${dest.id}/deliveries?runEventId=`);
    expect(bad.status).toBe(400);
    expect(bad.contentType).toMatch(/application\/problem\+json/);
  });

  test('when the destination does not exist, then test and delivery log answer 404', async () => {
    const p = aProject();
    const test = await admin.post(`${projectPath(p)}/webhook-destinations/missing/test`);
    expect(test.status).toBe(404);
    const log = await admin.get(`${projectPath(p)}/webhook-destinations/missing/deliveries`);
    expect(log.status).toBe(404);
    const bad = await admin.get(`${projectPath(p)}/webhook-destinations/missing/deliveries?status=nope`);
    expect(bad.status).toBe(400);
  });
});
