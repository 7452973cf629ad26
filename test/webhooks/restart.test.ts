import { feedbackCreated } from '@platform/contracts';
import { aProject, eventually, projectPath, startReceiver, type Receiver } from '@platform/testkit';
import {
  createDestination,
  deliveryLog,
  eventuallyLogged,
  signatureValid,
  startWebhookStack,
} from '../support/webhooks';

/**
 * A private stack whose first retry comes late enough (4 s) to stop the dispatcher in between, and which calls a
 * destination "failing for days" after 3 s without a success.
 */
let ws: Awaited<ReturnType<typeof startWebhookStack>>;
const receivers: Receiver[] = [];

beforeAll(async () => {
  ws = await startWebhookStack('wh-restart', {
    ALLOW_LOOPBACK_WEBHOOKS: 'true',
    WEBHOOK_RETRY_SCHEDULE_MS: '4000,300,300',
    WEBHOOK_RETRY_JITTER: '0.1',
    WEBHOOK_DISABLE_AFTER_FAILING_MS: '3000',
  });
}, 120_000);
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await ws?.stop();
});

async function aReceiver() {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

const feedback = (id: string) => ({
  feedback: {
    id,
    conversationId: 'conv-1',
    type: 'positive',
    agentId: 'agent-a',
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
  },
});
const forFeedback = (id: string) => (r: { json?: any }) => r.json?.data?.feedback?.id === id;

describe('webhook delivery across a dispatcher restart', () => {
  test('when the dispatcher is killed while a retry is scheduled, then a new dispatcher delivers it with the same webhook-id', async () => {
    const receiver = await aReceiver();
    receiver.respondWith(500);
    const p = aProject();
    const dest = await createDestination(ws.admin, p, { url: receiver.url, eventTypes: ['feedback.created'] });
    await ws.events.publish(feedbackCreated, p, feedback('fb-restart'));

    const [first] = await receiver.waitFor(forFeedback('fb-restart'));
    const scheduled = await eventuallyLogged(
      ws.admin,
      p,
      dest.id,
      (d) => d.status === 'pending' && d.attemptCount === 1,
      'the retry to be scheduled',
    );
    expect(scheduled.nextAttemptAt).not.toBeNull();

    await ws.stack.kill(ws.dispatcher(), 'SIGKILL');
    await ws.stack.startProcess('webhook-dispatcher');

    const attempts = await receiver.waitFor(forFeedback('fb-restart'), 2);
    expect(attempts[1]!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    for (const a of attempts) expect(signatureValid(dest.secret, a)).toBe(true);
    const done = await eventuallyLogged(
      ws.admin,
      p,
      dest.id,
      (d) => d.status === 'delivered',
      'the delivery to be recorded as delivered',
    );
    expect(done.attempts.map((a) => a.statusCode)).toEqual([500, 200]);
  });

  test('when an event is published while the dispatcher is down, then it is delivered once a dispatcher is back', async () => {
    const receiver = await aReceiver();
    const p = aProject();
    const dest = await createDestination(ws.admin, p, { url: receiver.url, eventTypes: ['feedback.created'] });
    await ws.stack.kill(ws.dispatcher(), 'SIGKILL');
    await ws.events.publish(feedbackCreated, p, feedback('fb-while-down'));
    await ws.stack.startProcess('webhook-dispatcher');
    const [got] = await receiver.waitFor(forFeedback('fb-while-down'));
    expect(signatureValid(dest.secret, got!)).toBe(true);
    const [logged] = await deliveryLog(ws.admin, p, dest.id);
    expect(logged).toMatchObject({ eventType: 'feedback.created' });
  });

  test('when a destination keeps failing past the failing limit, then it is disabled and says why', async () => {
    const receiver = await aReceiver();
    receiver.respondAlways(503);
    const p = aProject();
    const dest = await createDestination(ws.admin, p, { url: receiver.url, eventTypes: ['feedback.created'] });
    await ws.events.publish(feedbackCreated, p, feedback('fb-failing'));

    const disabled = await eventually(
      async () => {
        const res = await ws.admin.get(`${projectPath(p)}/webhook-destinations/${dest.id}`);
        return res.body.data?.enabled === false ? res.body.data : undefined;
      },
      'the failing destination to be disabled',
      30_000,
    );
    expect(disabled.disabledReason).toMatch(/failed since .* without a success \(last: the receiver answered 503/);
    // the pending retry of the delivery is cancelled rather than sent to a disabled destination
    const cancelled = await eventuallyLogged(
      ws.admin,
      p,
      dest.id,
      (d) => d.status !== 'pending',
      'the delivery to stop',
    );
    expect(['cancelled', 'failed']).toContain(cancelled.status);
  });
});
