import { createHmac } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { eventFilter, triggerInvoked } from '@platform/contracts';
import { subscribe, type EventOf, type Subscription } from '@platform/consumer';
import {
  aMemoryCredential,
  aProject,
  aProjectWithAgents,
  aTenantToken,
  collectEvents,
  connectAs,
  eventually,
  http,
  projectPath,
  startReceiver,
  uniqueId,
  withDatabase,
  type Receiver,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { expectProblem } from '../support/expect-problem';
import { createDestination } from '../support/webhooks';

type Project = { tenantId: string; projectId: string };

const SECRET = 'whsec_test_0123456789abcdef';
const agentPath = (p: Project, agentId = 'agent-1') => `${projectPath(p)}/agents/${agentId}`;
const hmac = (algorithm: string, data: string, encoding: 'hex' | 'base64' = 'hex') =>
  createHmac(algorithm, SECRET).update(data).digest(encoding);

/** A project whose credential `signing` holds SECRET in the memory store. */
async function aProjectWithSigningSecret(): Promise<Project> {
  const p = await aProjectWithAgents(admin);
  const P = projectPath(p);
  expect(
    (await admin.post(`${P}/credential-stores/memory-default/credentials`, { key: 'signing-key', value: SECRET }))
      .status,
  ).toBe(201);
  await aMemoryCredential(admin, p, { id: 'signing', name: 'signing secret', retrievalParams: { key: 'signing-key' } });
  return p;
}

async function aTrigger(p: Project, body: Record<string, unknown>): Promise<{ id: string; webhookUrl: string }> {
  const res = await admin.post(`${agentPath(p)}/triggers`, { name: 'hook', ...body });
  expect(res.status).toBe(201);
  return res.body.data;
}

const post = (url: string, raw: string, headers: Record<string, string>, type = 'application/json') =>
  http('POST', url, { raw, headers: { 'content-type': type, ...headers } });
const invocation = async (p: Project, triggerId: string, id: string) =>
  (await admin.get(`${agentPath(p)}/triggers/${triggerId}/invocations/${id}`)).body.data;
const invocations = async (p: Project, triggerId: string) =>
  (await admin.get(`${agentPath(p)}/triggers/${triggerId}/invocations?limit=100`)).body;

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectAs(stack.env.NATS_URL!, 'admin', { name: 'test-trigger-webhooks' });
});
afterAll(async () => {
  await nc.close();
});

/** The agent runtime's view: a durable typed consumer of trigger.invoked for one project. */
async function runtimeOf(p: Project): Promise<{ events: Array<EventOf<typeof triggerInvoked>>; sub: Subscription }> {
  const events: Array<EventOf<typeof triggerInvoked>> = [];
  const sub = await subscribe(
    nc,
    triggerInvoked,
    { durable: uniqueId('runtime').replace(/[^A-Za-z0-9_-]/g, '-'), tenantId: p.tenantId, projectId: p.projectId },
    (e) => {
      events.push(e);
    },
  );
  return { events, sub };
}

describe('trigger webhooks: GitHub-style signatures, dispatch, de-duplication', () => {
  test('when GitHub signs a push, then it answers 202, each run-as user gets one trigger.invoked spaced by dispatchDelayMs, and a retry with the same delivery id dispatches nothing new', async () => {
    const p = await aProjectWithSigningSecret();
    const runtime = await runtimeOf(p);
    try {
      const t = await aTrigger(p, {
        runAsUserIds: ['user-1', 'user-2'],
        dispatchDelayMs: 250,
        deliveryIdHeader: 'X-GitHub-Delivery',
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification: {
          algorithm: 'sha256',
          encoding: 'hex',
          signature: { source: 'header', key: 'X-Hub-Signature-256', prefix: 'sha256=' },
        },
        inputSchema: {
          type: 'object',
          required: ['ref', 'repository'],
          properties: {
            ref: { type: 'string' },
            repository: { type: 'object', properties: { full_name: { type: 'string' } } },
          },
        },
        outputTransform: { objectTransformation: { branch: 'ref', repo: 'repository.full_name' } },
        messageTemplate: 'Push to {{repo}} on {{branch}}',
      });
      expect(t.webhookUrl).toBe(
        `${stack.gatewayUrl}/run/tenants/${p.tenantId}/projects/${p.projectId}/agents/agent-1/triggers/${t.id}`,
      );
      // Exact bytes matter: the signature covers the body as sent (spacing and key order included).
      const body = '{"ref": "refs/heads/main",  "repository": {"full_name": "acme/api"}}';
      const headers = { 'X-GitHub-Delivery': 'delivery-1', 'X-Hub-Signature-256': `sha256=${hmac('sha256', body)}` };

      const res = await post(t.webhookUrl, body, headers);
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ success: true, invocationId: expect.any(String), duplicate: false });
      const { invocationId } = res.body;

      await eventually(() => runtime.events.length >= 2, 'two trigger.invoked events');
      const forUsers = runtime.events
        .filter((e) => e.data.invocationId === invocationId)
        .sort((a, b) => a.data.dispatchIndex - b.data.dispatchIndex);
      expect(forUsers.map((e) => e.data)).toEqual(
        ['user-1', 'user-2'].map((userId, dispatchIndex) => ({
          tenantId: p.tenantId,
          projectId: p.projectId,
          agentId: 'agent-1',
          triggerId: t.id,
          invocationId,
          userId,
          message: 'Push to acme/api on refs/heads/main',
          input: { branch: 'refs/heads/main', repo: 'acme/api' },
          dispatchIndex,
          rerunOf: null,
        })),
      );
      expect(forUsers.map((e) => e.id)).toEqual([`${invocationId}-0`, `${invocationId}-1`]);

      const read = await eventually(async () => {
        const inv = await invocation(p, t.id, invocationId);
        return inv.status === 'dispatched' ? inv : undefined;
      }, 'the invocation recorded as dispatched');
      expect(read).toMatchObject({
        id: invocationId,
        status: 'dispatched',
        verdicts: { authentication: 'skipped', signature: 'passed', schema: 'passed' },
        error: null,
        deliveryId: 'delivery-1',
        message: 'Push to acme/api on refs/heads/main',
        input: { branch: 'refs/heads/main', repo: 'acme/api' },
        bodyBytes: Buffer.byteLength(body),
        completedAt: expect.any(String),
      });
      expect(read.dispatches.map((d: { userId: string; state: string }) => [d.userId, d.state])).toEqual([
        ['user-1', 'dispatched'],
        ['user-2', 'dispatched'],
      ]);
      // The second user's request is due dispatchDelayMs after the first (the schedule, not a measured time).
      expect(Date.parse(read.dispatches[1].dueAt) - Date.parse(read.dispatches[0].dueAt)).toBe(250);
      expect(Date.parse(read.dispatches[1].dispatchedAt)).toBeGreaterThanOrEqual(Date.parse(read.dispatches[1].dueAt));

      // The provider retries the same delivery: the first invocation is answered, nothing is stored or dispatched.
      const retry = await post(t.webhookUrl, body, headers);
      expect(retry.status).toBe(202);
      expect(retry.body).toEqual({ success: true, invocationId, duplicate: true });
      // A new delivery is a new invocation; once its events are in, the first still has exactly two.
      const next = await post(t.webhookUrl, body, { ...headers, 'X-GitHub-Delivery': 'delivery-2' });
      expect(next.body.duplicate).toBe(false);
      await eventually(
        () => runtime.events.filter((e) => e.data.invocationId === next.body.invocationId).length === 2,
        'the second delivery dispatched',
      );
      expect(runtime.events.filter((e) => e.data.invocationId === invocationId)).toHaveLength(2);
      const list = await invocations(p, t.id);
      expect(list.pagination.total).toBe(2);
      expect(list.data.map((i: { id: string }) => i.id)).toEqual([next.body.invocationId, invocationId]);
    } finally {
      await runtime.sub.stop();
    }
  });

  test('when the GitHub signature is missing or wrong, then it answers 401 or 403, records the rejection with its verdict, and dispatches nothing', async () => {
    const p = await aProjectWithSigningSecret();
    const t = await aTrigger(p, {
      runAsUserId: 'user-1',
      signingSecretCredentialReferenceId: 'signing',
      signatureVerification: {
        algorithm: 'sha256',
        encoding: 'hex',
        signature: { source: 'header', key: 'X-Hub-Signature-256', prefix: 'sha256=' },
      },
    });
    const body = '{"action":"opened"}';
    expectProblem(await post(t.webhookUrl, body, {}), 401);
    expectProblem(
      await post(t.webhookUrl, body, { 'X-Hub-Signature-256': `sha256=${hmac('sha256', '{"action":"closed"}')}` }),
      403,
    );
    // Signed with another algorithm than configured: refused too.
    expectProblem(await post(t.webhookUrl, body, { 'X-Hub-Signature-256': `sha256=${hmac('sha512', body)}` }), 403);
    const list = await invocations(p, t.id);
    expect(list.data).toHaveLength(3);
    for (const inv of list.data) {
      expect(inv).toMatchObject({
        status: 'rejected',
        verdicts: { authentication: 'skipped', signature: 'failed', schema: 'skipped' },
        dispatches: [],
        message: null,
        input: null,
      });
    }
    expect(list.data.map((i: { error: { status: number } }) => i.error.status).sort()).toEqual([401, 403, 403]);
    expectProblem(await admin.post(`${agentPath(p)}/triggers/${t.id}/invocations/${list.data[0].id}/rerun`), 409);
  });
});

describe('trigger webhooks: Stripe-style and Slack signatures', () => {
  /** Unix seconds, `offsetSeconds` from now. */
  const unixTime = (offsetSeconds = 0) => String(Math.floor(Date.now() / 1000) + offsetSeconds);

  const stripeVerification = (validation: Record<string, unknown> = {}) => ({
    algorithm: 'sha256',
    encoding: 'hex',
    signature: { source: 'header', key: 'Stripe-Signature', regex: 'v1=([0-9a-f]+)' },
    signedComponents: [
      { source: 'header', key: 'Stripe-Signature', regex: 't=(\\d+)', timestamp: true },
      { source: 'body', required: true },
    ],
    componentJoin: { strategy: 'concatenate', separator: '.' },
    validation,
  });
  const stripeHeader = (timestamp: string, body: string) =>
    `t=${timestamp},v1=${hmac('sha256', `${timestamp}.${body}`)},v0=deadbeef`;

  test('when a Stripe-style timestamped signature (t=…,v1=…) signs "<t>.<body>", then it is accepted; the same header on another body is 403', async () => {
    const p = await aProjectWithSigningSecret();
    const t = await aTrigger(p, {
      signingSecretCredentialReferenceId: 'signing',
      signatureVerification: stripeVerification(),
      messageTemplate: 'Stripe {{type}}',
    });
    const body = '{"id":"evt_1","type":"invoice.paid"}';
    const timestamp = unixTime();
    const header = stripeHeader(timestamp, body);
    const ok = await post(t.webhookUrl, body, { 'Stripe-Signature': header });
    expect(ok.status).toBe(202);
    expect(await invocation(p, t.id, ok.body.invocationId)).toMatchObject({
      verdicts: { signature: 'passed' },
      message: 'Stripe invoice.paid',
    });
    expectProblem(
      await post(t.webhookUrl, '{"id":"evt_1","type":"invoice.voided"}', { 'Stripe-Signature': header }),
      403,
    );
    // Another timestamp with the same v1 is another signed text.
    expectProblem(
      await post(t.webhookUrl, body, {
        'Stripe-Signature': header.replace(`t=${timestamp}`, `t=${Number(timestamp) + 1}`),
      }),
      403,
    );
  });

  test('when a Stripe-style call was signed longer ago than the tolerance, then it is refused with 401 even though its signature is right; a wider timestampToleranceSeconds accepts it', async () => {
    const p = await aProjectWithSigningSecret();
    const t = await aTrigger(p, {
      signingSecretCredentialReferenceId: 'signing',
      signatureVerification: stripeVerification(),
    });
    const body = '{"id":"evt_old","type":"invoice.paid"}';
    // Captured six minutes ago and replayed now: the default tolerance is five minutes.
    const replayed = { 'Stripe-Signature': stripeHeader(unixTime(-360), body) };
    const refused = await post(t.webhookUrl, body, replayed);
    expectProblem(refused, 401);
    expect(refused.body.detail).toMatch(/timestamp is \d+ s old; at most 300 s/);
    const [rejected] = (await invocations(p, t.id)).data;
    expect(rejected).toMatchObject({ status: 'rejected', verdicts: { signature: 'failed' }, error: { status: 401 } });
    expectProblem(await post(t.webhookUrl, body, { 'Stripe-Signature': stripeHeader(unixTime(360), body) }), 401);

    const widened = await admin.patch(`${agentPath(p)}/triggers/${t.id}`, {
      signatureVerification: stripeVerification({ timestampToleranceSeconds: 900 }),
    });
    expect(widened.status).toBe(200);
    expect(widened.body.data.signatureVerification.validation).toMatchObject({ timestampToleranceSeconds: 900 });
    expect((await post(t.webhookUrl, body, replayed)).status).toBe(202);
  });

  const slackVerification = (marked: boolean) => ({
    algorithm: 'sha256',
    encoding: 'hex',
    signature: { source: 'header', key: 'X-Slack-Signature', prefix: 'v0=' },
    signedComponents: [
      { source: 'literal', value: 'v0' },
      { source: 'header', key: 'X-Slack-Request-Timestamp', ...(marked ? { timestamp: true } : {}) },
      { source: 'body' },
    ],
    componentJoin: { strategy: 'concatenate', separator: ':' },
  });
  const slackHeaders = (ts: string, body: string) => ({
    'X-Slack-Request-Timestamp': ts,
    'X-Slack-Signature': `v0=${hmac('sha256', `v0:${ts}:${body}`)}`,
  });
  const FORM = 'application/x-www-form-urlencoded';

  test('when Slack signs "v0:<timestamp>:<body>" of a form-encoded slash command, then it is accepted and the form fields feed the schema and the template', async () => {
    const p = await aProjectWithSigningSecret();
    const t = await aTrigger(p, {
      runAsUserId: 'user-1',
      signingSecretCredentialReferenceId: 'signing',
      signatureVerification: slackVerification(true),
      inputSchema: {
        type: 'object',
        required: ['command', 'text'],
        properties: { command: { type: 'string' }, text: { type: 'string' } },
      },
      messageTemplate: '{{command}} {{text}}',
    });
    const body = 'token=abc&team_id=T1&command=%2Fdeploy&text=api+to+prod';
    const ts = unixTime();
    const headers = slackHeaders(ts, body);
    const ok = await post(t.webhookUrl, body, headers, FORM);
    expect(ok.status).toBe(202);
    expect(await invocation(p, t.id, ok.body.invocationId)).toMatchObject({
      verdicts: { signature: 'passed', schema: 'passed' },
      message: '/deploy api to prod',
      input: { token: 'abc', team_id: 'T1', command: '/deploy', text: 'api to prod' },
    });
    // The timestamp is signed: changing it breaks the signature.
    expectProblem(
      await post(t.webhookUrl, body, { ...headers, 'X-Slack-Request-Timestamp': String(Number(ts) + 1) }, FORM),
      403,
    );
    // A required signed component that is missing is 401 (nothing to verify against).
    expectProblem(await post(t.webhookUrl, body, { 'X-Slack-Signature': headers['X-Slack-Signature'] }, FORM), 401);
  });

  test('when a Slack request is replayed after more than five minutes, or its timestamp is not a Unix time, then 401; without the timestamp mark the trigger warns that replays are possible', async () => {
    const p = await aProjectWithSigningSecret();
    const t = await aTrigger(p, {
      signingSecretCredentialReferenceId: 'signing',
      signatureVerification: slackVerification(true),
    });
    const body = 'command=%2Fdeploy&text=api';
    const old = await post(t.webhookUrl, body, slackHeaders(unixTime(-301), body), FORM);
    expectProblem(old, 401);
    expect(old.body.detail).toContain('old');
    expectProblem(await post(t.webhookUrl, body, slackHeaders('yesterday', body), FORM), 401);
    expect((await post(t.webhookUrl, body, slackHeaders(unixTime(-5), body), FORM)).status).toBe(202);

    // The same configuration without the mark has no replay guard, and says so when it is written.
    const unmarked = await admin.post(`${agentPath(p)}/triggers`, {
      name: 'unguarded',
      signingSecretCredentialReferenceId: 'signing',
      signatureVerification: slackVerification(false),
    });
    expect(unmarked.status).toBe(201);
    expect(unmarked.body.warning).toContain('timestamp: true');
    expect((await post(unmarked.body.data.webhookUrl, body, slackHeaders(unixTime(-3600), body), FORM)).status).toBe(
      202,
    );
  });

  test.each([
    [
      'two components are marked as the timestamp',
      {
        signedComponents: [
          { source: 'header', key: 'X-A', timestamp: true },
          { source: 'header', key: 'X-B', timestamp: true },
        ],
      },
      '/signatureVerification/signedComponents/1/timestamp',
    ],
    [
      'a literal is marked as the timestamp',
      { signedComponents: [{ source: 'literal', value: '1', timestamp: true }, { source: 'body' }] },
      '/signatureVerification/signedComponents/0/timestamp',
    ],
    [
      'a tolerance is set but no component is the timestamp',
      { validation: { timestampToleranceSeconds: 60 } },
      '/signatureVerification/validation/timestampToleranceSeconds',
    ],
    [
      'the tolerance is over a day',
      {
        signedComponents: [{ source: 'header', key: 'X-T', timestamp: true }],
        validation: { timestampToleranceSeconds: 86_401 },
      },
      '/signatureVerification/validation/timestampToleranceSeconds',
    ],
  ])('when %s, then the trigger is refused with 400 at the field', async (_what, fields, pointer) => {
    const p = await aProjectWithSigningSecret();
    const signatureVerification = { signature: { source: 'header', key: 'X-Sig' }, ...fields };
    expectProblem(
      await admin.post(`${agentPath(p)}/triggers`, {
        name: 'bad',
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification,
      }),
      400,
      pointer,
    );
    expect((await admin.get(`${agentPath(p)}/triggers`)).body.pagination.total).toBe(0);
  });
});

describe('trigger webhooks: authentication, schema, transform, 404, limits', () => {
  test('when the configured authentication header is missing, wrong or right, then 401, 403 and 202, each verdict recorded', async () => {
    const p = await aProjectWithAgents(admin);
    const t = await aTrigger(p, { authentication: { headers: [{ name: 'X-Api-Token', value: 'tok-123456789' }] } });
    expectProblem(await post(t.webhookUrl, '{}', {}), 401);
    expectProblem(await post(t.webhookUrl, '{}', { 'X-Api-Token': 'tok-12345678' }), 403);
    const ok = await post(t.webhookUrl, '{"a":1}', { 'x-api-token': 'tok-123456789' });
    expect(ok.status).toBe(202);
    const list = (await invocations(p, t.id)).data;
    expect(
      list.map((i: { status: string; verdicts: { authentication: string } }) => [i.status, i.verdicts.authentication]),
    ).toEqual(
      [
        ['pending', 'passed'],
        ['rejected', 'failed'],
        ['rejected', 'failed'],
      ].map(([s, v], i) => (i === 0 ? [expect.stringMatching(/pending|dispatched/), v] : [s, v])),
    );
    // One request without a user when the trigger names no run-as user; the message is the input as JSON.
    const inv = await invocation(p, t.id, ok.body.invocationId);
    expect(inv).toMatchObject({ message: '{"a":1}', input: { a: 1 } });
    expect(inv.dispatches.map((d: { userId: string | null }) => d.userId)).toEqual([null]);
  });

  test('when the body does not match inputSchema, then 422 with a pointer per problem, and the rejection is recorded', async () => {
    const p = await aProjectWithAgents(admin);
    const t = await aTrigger(p, {
      inputSchema: {
        type: 'object',
        required: ['action', 'issue'],
        properties: {
          action: { type: 'string' },
          issue: { type: 'object', required: ['number'], properties: { number: { type: 'integer' } } },
        },
      },
    });
    const res = await post(t.webhookUrl, '{"action":5,"issue":{}}', {});
    expectProblem(res, 422);
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { pointer: '/action', detail: expect.any(String) },
        { pointer: '/issue/number', detail: expect.any(String) },
      ]),
    );
    const [rejected] = (await invocations(p, t.id)).data;
    expect(rejected).toMatchObject({ status: 'rejected', verdicts: { schema: 'failed' }, error: { status: 422 } });
    // Bad JSON never reaches the trigger.
    expectProblem(await post(t.webhookUrl, '{"action":', {}), 400);
    expectProblem(await post(t.webhookUrl, 'plain', {}, 'text/plain'), 415);
  });

  test('when outputTransform has a jmespath, then the input is what it picks, and the template renders from it', async () => {
    const p = await aProjectWithAgents(admin);
    const t = await aTrigger(p, {
      outputTransform: { jmespath: 'data.object' },
      messageTemplate: 'Order {{id}} for {{customer.name}}: {{items}}',
    });
    const ok = await post(
      t.webhookUrl,
      JSON.stringify({ data: { object: { id: 'o-1', customer: { name: 'Ada' }, items: [1, 2] } } }),
      {},
    );
    expect(ok.status).toBe(202);
    expect(await invocation(p, t.id, ok.body.invocationId)).toMatchObject({
      input: { id: 'o-1', customer: { name: 'Ada' }, items: [1, 2] },
      message: 'Order o-1 for Ada: [1,2]',
    });
    // An expression that does not compile is refused when the trigger is written.
    expectProblem(
      await admin.patch(`${agentPath(p)}/triggers/${t.id}`, { outputTransform: { jmespath: 'data.[' } }),
      422,
    );
  });

  test('when a trigger is unknown, disabled or addressed under another agent, then 404 and nothing is recorded', async () => {
    const p = await aProjectWithAgents(admin);
    const t = await aTrigger(p, {});
    expectProblem(await post(t.webhookUrl.replace(/\/triggers\/.*$/, '/triggers/nope'), '{}', {}), 404);
    expectProblem(await post(t.webhookUrl.replace('/agents/agent-1/', '/agents/agent-2/'), '{}', {}), 404);
    expect((await admin.patch(`${agentPath(p)}/triggers/${t.id}`, { enabled: false })).status).toBe(200);
    expectProblem(await post(t.webhookUrl, '{}', {}), 404);
    expect((await invocations(p, t.id)).pagination.total).toBe(0);
  });

  test('when a trigger gets more calls a minute than its rateLimitPerMinute, then 429 with Retry-After', async () => {
    const p = await aProjectWithAgents(admin);
    const t = await aTrigger(p, { rateLimitPerMinute: 2 });
    expect((await post(t.webhookUrl, '{}', {})).status).toBe(202);
    expect((await post(t.webhookUrl, '{}', {})).status).toBe(202);
    const limited = await post(t.webhookUrl, '{}', {});
    expectProblem(limited, 429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another trigger has its own budget.
    const other = await aTrigger(p, { rateLimitPerMinute: 2 });
    expect((await post(other.webhookUrl, '{}', {})).status).toBe(202);
    expect((await invocations(p, t.id)).pagination.total).toBe(2);
  });

  test('when a body over the trigger limit is sent, then 413 and nothing is recorded', async () => {
    const p = await aProjectWithAgents(admin);
    const t = await aTrigger(p, {});
    const big = JSON.stringify({ pad: 'x'.repeat(1024 * 1024) });
    expectProblem(await post(t.webhookUrl, big, {}), 413);
    expect((await invocations(p, t.id)).pagination.total).toBe(0);
  });

  test('when a trigger sets its own bodyLimitBytes, then a body over it gets 413 naming the limit, one at it is accepted, and the limit cannot exceed the platform maximum', async () => {
    const p = await aProjectWithAgents(admin);
    const t = await aTrigger(p, { bodyLimitBytes: 64 });
    expect((await admin.get(`${agentPath(p)}/triggers/${t.id}`)).body.data.bodyLimitBytes).toBe(64);
    const atLimit = JSON.stringify({ pad: 'x'.repeat(64 - '{"pad":""}'.length) });
    expect(Buffer.byteLength(atLimit)).toBe(64);
    expect((await post(t.webhookUrl, atLimit, {})).status).toBe(202);
    const over = await post(t.webhookUrl, JSON.stringify({ pad: 'x'.repeat(64) }), {});
    expectProblem(over, 413);
    expect(over.body.detail).toContain('64 bytes');
    expect((await invocations(p, t.id)).pagination.total).toBe(1);
    // Back to the platform maximum, the same body is accepted.
    expect(
      (await admin.patch(`${agentPath(p)}/triggers/${t.id}`, { bodyLimitBytes: null })).body.data.bodyLimitBytes,
    ).toBeNull();
    expect((await post(t.webhookUrl, JSON.stringify({ pad: 'x'.repeat(64) }), {})).status).toBe(202);
    expectProblem(
      await admin.patch(`${agentPath(p)}/triggers/${t.id}`, { bodyLimitBytes: 1024 * 1024 + 1 }),
      400,
      '/bodyLimitBytes',
    );
    expectProblem(
      await admin.post(`${agentPath(p)}/triggers`, { name: 'zero', bodyLimitBytes: 0 }),
      400,
      '/bodyLimitBytes',
    );
  });
});

describe('trigger invocations: rerun, delivery to webhooks, crash, isolation', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  test('when an accepted invocation is rerun, then a new invocation with the same input and message is dispatched to the current users', async () => {
    const p = await aProjectWithAgents(admin);
    const runtime = await runtimeOf(p);
    try {
      const t = await aTrigger(p, { runAsUserId: 'user-1', messageTemplate: 'Build {{n}}' });
      const first = await post(t.webhookUrl, '{"n":7}', {});
      expect(first.status).toBe(202);
      expect((await admin.patch(`${agentPath(p)}/triggers/${t.id}`, { runAsUserIds: ['user-2'] })).status).toBe(200);
      const rerun = await admin.post(`${agentPath(p)}/triggers/${t.id}/invocations/${first.body.invocationId}/rerun`);
      expect(rerun.status).toBe(202);
      expect(rerun.body.data).toMatchObject({
        rerunOf: first.body.invocationId,
        message: 'Build 7',
        input: { n: 7 },
        status: expect.stringMatching(/pending|dispatched/),
      });
      const newId = rerun.body.data.id;
      expect(newId).not.toBe(first.body.invocationId);
      await eventually(
        () => runtime.events.filter((e) => e.data.invocationId === newId).length === 2,
        'the rerun dispatched',
      );
      expect(
        runtime.events
          .filter((e) => e.data.invocationId === newId)
          .map((e) => [e.data.userId, e.data.message, e.data.rerunOf]),
      ).toEqual(
        expect.arrayContaining([
          ['user-1', 'Build 7', first.body.invocationId],
          ['user-2', 'Build 7', first.body.invocationId],
        ]),
      );
      expectProblem(await admin.post(`${agentPath(p)}/triggers/${t.id}/invocations/unknown-1/rerun`), 404);
    } finally {
      await runtime.sub.stop();
    }
  });

  test('when a webhook destination subscribes to trigger.invoked, then it receives each execution request', async () => {
    const p = await aProjectWithAgents(admin);
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['trigger.invoked'] });
    expect(dest.enabled).toBe(true);
    const t = await aTrigger(p, { runAsUserId: 'user-9', messageTemplate: 'hello {{who}}' });
    const res = await post(t.webhookUrl, '{"who":"world"}', {});
    expect(res.status).toBe(202);
    const [got] = await receiver.waitFor((r) => r.body.includes(res.body.invocationId), 1, 20_000);
    expect(got!.json).toMatchObject({
      type: 'trigger.invoked',
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: 'agent-1',
      data: { invocationId: res.body.invocationId, userId: 'user-9', message: 'hello world', input: { who: 'world' } },
    });
  });

  test('when a process stored an invocation and died before publishing, then the sweep publishes its requests', async () => {
    const p = await aProjectWithAgents(admin);
    const t = await aTrigger(p, {});
    const sub = await collectEvents(eventFilter(triggerInvoked, p));
    await sub.ready;
    try {
      // The document exactly as acceptWebhookCall stores it before answering 202; no process has it in a timer.
      const id = uniqueId('inv').replace(/[^A-Za-z0-9]/g, '');
      const now = new Date();
      await withDatabase(stack.env.MONGO_URL!, 'management', (db) =>
        db.collection('triggerInvocations').insertOne({
          _id: `crash-${id}` as never,
          id,
          tenantId: p.tenantId,
          projectId: p.projectId,
          agentId: 'agent-1',
          triggerId: t.id,
          status: 'accepted',
          verdicts: { authentication: 'skipped', signature: 'skipped', schema: 'skipped' },
          error: null,
          deliveryId: null,
          rerunOf: null,
          message: 'left behind',
          inputJson: '{"x":1}',
          bodyBytes: 7,
          dispatches: {
            d0: { index: 0, userId: null, state: 'pending', eventId: `${id}-0`, dueAt: now, dispatchedAt: null },
          },
          dispatchPending: true,
          receivedAt: now,
          completedAt: null,
        }),
      );
      const event = await eventually(
        () => sub.events.find((e) => e.data.invocationId === id),
        'the left-behind request published',
        20_000,
      );
      expect(event).toMatchObject({
        id: `${id}-0`,
        type: 'trigger.invoked',
        data: { message: 'left behind', input: { x: 1 }, userId: null },
      });
      await eventually(
        async () => (await invocation(p, t.id, id)).status === 'dispatched',
        'the invocation marked dispatched',
      );
    } finally {
      await sub.close();
    }
  });

  test("when another tenant names tenant A's trigger under its own path, or reads A's invocations, then 403 or 404 and A's log is unchanged", async () => {
    const a = await aProjectWithAgents(admin);
    const b = aProject();
    const t = await aTrigger(a, {});
    const ok = await post(t.webhookUrl, '{}', {});
    expect(ok.status).toBe(202);
    const underB = t.webhookUrl.replace(
      `/tenants/${a.tenantId}/projects/${a.projectId}/`,
      `/tenants/${b.tenantId}/projects/${a.projectId}/`,
    );
    expectProblem(await post(underB, '{}', {}), 404);
    const tokenOfB = await aTenantToken(admin, b.tenantId, 'admin');
    const base = `${stack.gatewayUrl}${agentPath(a)}/triggers/${t.id}/invocations`;
    expect([403, 404]).toContain((await http('GET', base, { token: tokenOfB })).status);
    expect([403, 404]).toContain((await http('GET', `${base}/${ok.body.invocationId}`, { token: tokenOfB })).status);
    expect([403, 404]).toContain(
      (await http('POST', `${base}/${ok.body.invocationId}/rerun`, { token: tokenOfB })).status,
    );
    expect((await invocations(a, t.id)).pagination.total).toBe(1);
  });
});
