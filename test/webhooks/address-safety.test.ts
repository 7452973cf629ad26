import { feedbackCreated } from '@platform/contracts';
import { aProject, projectPath, startReceiver, type Receiver } from '@platform/testkit';
import { createDestination, eventuallyLogged, startWebhookStack } from '../support/webhooks';

/**
 * A private stack with production address rules: loopback is NOT allowed. The host name `private-target.test`
 * answers 10.0.0.1 through WEBHOOK_HOST_OVERRIDES, so the private-address path is exercised without DNS and
 * without any packet leaving the machine: the refusal happens before a socket connects.
 */
let ws: Awaited<ReturnType<typeof startWebhookStack>>;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  ws = await startWebhookStack('wh-safety', {
    ALLOW_LOOPBACK_WEBHOOKS: 'false',
    WEBHOOK_HOST_OVERRIDES: 'private-target.test=10.0.0.1,metadata-target.test=169.254.169.254',
    WEBHOOK_RETRY_SCHEDULE_MS: '200,200',
  });
}, 120_000);
afterAll(async () => {
  await receiver?.close();
  await ws?.stop();
});

const port = () => new URL(receiver.url).port;

describe('webhook address safety with loopback not allowed', () => {
  const literalCorpus = [
    'http://127.0.0.1:{port}/hook',
    'http://10.1.2.3/hook',
    'http://172.16.0.1/hook',
    'http://192.168.0.1/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/hook',
    'http://[::1]:{port}/hook',
    'http://[fc00::1]/hook',
    'http://[::ffff:127.0.0.1]:{port}/hook',
    'http://2130706433:{port}/hook',
    'http://0177.0.0.1:{port}/hook',
    'http://0x7f.0.0.1:{port}/hook',
  ];

  test.each(literalCorpus)(
    'when a destination URL is %s, then create answers 422 and nothing is stored or contacted',
    async (template) => {
      const p = aProject();
      const url = template.replace('{port}', port());
      const res = await ws.admin.post(`${projectPath(p)}/webhook-destinations`, {
        name: 'unsafe',
        url,
        eventTypes: ['feedback.created'],
      });
      expect(res.status).toBe(422);
      expect(res.body.detail).toMatch(/not deliverable/);
      const list = await ws.admin.get(`${projectPath(p)}/webhook-destinations`);
      expect(list.body.data).toEqual([]);
      expect(receiver.connections).toBe(0);
    },
  );

  test.each([
    [
      'a host name resolving to loopback (localhost)',
      () => `http://localhost:${port()}/hook`,
      /localhost resolves to .*loopback/,
    ],
    [
      'a host name resolving to 10.0.0.1',
      () => 'http://private-target.test/hook',
      /private-target\.test resolves to a refused address: 10\.0\.0\.1 is a private address/,
    ],
    [
      'a host name resolving to the metadata address',
      () => 'http://metadata-target.test/latest',
      /169\.254\.169\.254 is a cloud metadata address/,
    ],
  ])(
    'when the destination is %s, then test and event deliveries are refused before connecting and not retried',
    async (_what, url, why) => {
      const p = aProject();
      const dest = await createDestination(ws.admin, p, { url: url(), eventTypes: ['feedback.created'] });

      const test = await ws.admin.post(`${projectPath(p)}/webhook-destinations/${dest.id}/test`);
      expect(test.status).toBe(200);
      expect(test.body.data).toMatchObject({
        success: false,
        statusCode: null,
        error: expect.stringMatching(/^refused before connecting/),
      });
      expect(test.body.data.error).toMatch(why);

      await ws.events.publish(feedbackCreated, p, {
        feedback: {
          id: 'fb-1',
          conversationId: 'c-1',
          type: 'negative',
          agentId: 'a-1',
          createdAt: new Date().toISOString(),
          updatedAt: new Date().toISOString(),
        },
      });
      const logged = await eventuallyLogged(
        ws.admin,
        p,
        dest.id,
        (d) => d.eventType === 'feedback.created' && d.status === 'failed',
        'the refused delivery',
      );
      expect(logged).toMatchObject({ attemptCount: 1, lastStatusCode: null, lastError: expect.stringMatching(why) });
      expect(receiver.connections).toBe(0);
      expect(receiver.received).toHaveLength(0);
    },
  );
});
