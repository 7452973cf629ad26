import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceName } from '@platform/contracts';
import {
  aProject,
  anAnalyticsKey,
  anApiKey,
  aTenantToken,
  client,
  eventually,
  http,
  projectPath,
  startOtlpReceiver,
  startPrivateStack,
  startReceiver,
  type OtlpReceiver,
  type PrivateStack,
  type Receiver,
} from '@platform/testkit';
import { sample, scrape } from '../support/metrics';
import { createDestination } from '../support/webhooks';

/**
 * A stack of its own: debug logs, spans exported to a local OTLP receiver, a health listener per process, and a
 * private Redis for run-auth and the gateway (stopped by the readiness test).
 */
let stack: PrivateStack;
let otlp: OtlpReceiver;
let receiver: Receiver;

const proc = (name: ServiceName) => stack.process(name);

beforeAll(async () => {
  otlp = await startOtlpReceiver();
  receiver = await startReceiver();
  stack = await startPrivateStack({
    name: 'obs',
    services: ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher', 'analytics'],
    healthPorts: true,
    privateRedis: ['run-auth', 'gateway'],
    env: {
      LOG_LEVEL: 'debug',
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      WEBHOOK_RETRY_SCHEDULE_MS: '200,400',
      WEBHOOK_CAP_WAIT_MS: '100',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: '200',
    },
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await otlp?.close();
  await receiver?.close();
});

describe('traces', () => {
  test("when a run event is posted, then the service span, the dispatcher span and the webhook attempt carry the gateway span's trace id, and the logs show request id and trace id", async () => {
    const admin = stack.admin;
    const p = aProject();
    const { key } = await anApiKey(admin, p, { agentId: 'trace-agent' });
    await createDestination(admin, p, { name: 'r', url: receiver.url, eventTypes: ['event.created'] });

    const requestId = `req_trace_${Date.now().toString(36)}`;
    const res = await client(stack.gatewayUrl, key).post(
      '/run/v1/events',
      { id: `ev-${requestId}`, type: 'trace.tested' },
      { headers: { 'x-request-id': requestId } },
    );
    expect(res.status).toBe(201);

    const gatewaySpan = await otlp.waitFor((s) => s.service === 'gateway' && s.attributes['request.id'] === requestId);
    const traceId = gatewaySpan.traceId;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const sendSpan = await otlp.waitFor(
      (s) => s.service === 'gateway' && s.traceId === traceId && s.name === 'send svc.events-ingest.events.create',
    );
    const serviceSpan = await otlp.waitFor(
      (s) =>
        s.service === 'events-ingest' &&
        s.name === 'svc.events-ingest.events.create' &&
        s.attributes['request.id'] === requestId,
    );
    expect(serviceSpan.traceId).toBe(traceId);
    expect(serviceSpan.parentSpanId).toBe(sendSpan.spanId);
    // On through JetStream (the outbox entry carried the context) to the dispatcher and the webhook attempt.
    const consumed = await otlp.waitFor(
      (s) => s.service === 'webhook-dispatcher' && s.traceId === traceId && s.name.startsWith('process '),
      60_000,
    );
    expect(consumed.name).toBe('process webhook-dispatcher-event-created');
    const attempt = await otlp.waitFor(
      (s) => s.service === 'webhook-dispatcher' && s.traceId === traceId && s.name === 'webhook delivery',
      60_000,
    );
    expect(attempt.attributes['webhook.outcome']).toBe('delivered');

    const lines = () =>
      readFileSync(proc('events-ingest').logFile, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const line = await eventually(
      () => lines().find((l) => l.requestId === requestId),
      'a log line of the request in events-ingest',
    );
    expect(line).toMatchObject({ requestId, traceId, service: 'events-ingest' });
  }, 120_000);
});

describe('batched requests', () => {
  test('when run events of two projects arrive at once, then events-ingest gets them together in fewer messages, and each answer, row and span is its own', async () => {
    const admin = stack.admin;
    const projects = [aProject(), aProject()];
    const keys = await Promise.all(projects.map(async (p) => (await anApiKey(admin, p, { agentId: 'co-agent' })).key));
    const batched = async () =>
      sample(await scrape(proc('events-ingest').healthUrl), 'nats_batched_requests_sum', {
        subject: 'svc.events-ingest.events.create',
      }) ?? 0;
    const before = await batched();
    const tag = Date.now().toString(36);
    const sent = Array.from({ length: 40 }, (_, i) => ({
      side: i % 2,
      id: `co-${i}`,
      requestId: `req_co_${i}_${tag}`,
    }));
    const answers = await Promise.all(
      sent.map((s) =>
        client(stack.gatewayUrl, keys[s.side]).post(
          '/run/v1/events',
          { id: s.id, type: 'co.tested', properties: { i: s.id } },
          { headers: { 'x-request-id': s.requestId } },
        ),
      ),
    );
    answers.forEach((res, i) => {
      const { id, side } = sent[i]!;
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({
        id,
        tenantId: projects[side]!.tenantId,
        projectId: projects[side]!.projectId,
        properties: { i: id },
      });
    });
    // Most of the 40 travelled in batches (how many share one depends on the turns they arrive in).
    expect((await batched()) - before).toBeGreaterThanOrEqual(2);
    // Each request is served as if it came alone: its own span, a child of the gateway's send span of that request.
    for (const { requestId } of [sent[3]!, sent[30]!]) {
      const served = await otlp.waitFor(
        (s) =>
          s.service === 'events-ingest' &&
          s.name === 'svc.events-ingest.events.create' &&
          s.attributes['request.id'] === requestId,
      );
      const send = await otlp.waitFor(
        (s) =>
          s.service === 'gateway' &&
          s.name === 'send svc.events-ingest.events.create' &&
          s.spanId === served.parentSpanId,
      );
      const gateway = await otlp.waitFor((s) => s.service === 'gateway' && s.attributes['request.id'] === requestId);
      expect([send.traceId, served.traceId]).toEqual([gateway.traceId, gateway.traceId]);
    }
  });
});

describe('metrics', () => {
  test('when requests, events and deliveries have happened, then every process serves them in Prometheus format on its health port', async () => {
    const admin = stack.admin;
    expect((await http('GET', `${stack.gatewayUrl}/ping`)).status).toBe(200);
    const p = aProject();
    const { key } = await anApiKey(admin, p, { agentId: 'metrics-agent' });
    await createDestination(admin, p, { name: 'r', url: receiver.url, eventTypes: ['event.created'] });
    expect(
      (await client(stack.gatewayUrl, key).post('/run/v1/events', { id: 'metrics-1', type: 'metrics.tested' })).status,
    ).toBe(201);
    expect(
      (await client(stack.gatewayUrl, key).post('/run/v1/events', { id: 'metrics-1', type: 'metrics.tested' })).status,
    ).toBe(200);
    await receiver.waitFor((r) => r.json?.tenantId === p.tenantId, 1, 60_000);

    const gateway = await scrape(proc('gateway').healthUrl);
    expect(sample(gateway, 'http_requests_total', { operation: 'ping', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(
      sample(gateway, 'http_requests_total', { operation: 'createRunEvent', status: '201' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(gateway, 'http_request_duration_seconds_count', { operation: 'createRunEvent' }),
    ).toBeGreaterThanOrEqual(2);
    expect(sample(gateway, 'process_cpu_user_seconds_total')).toBeDefined();

    const management = await scrape(proc('management').healthUrl);
    expect(
      sample(management, 'nats_request_duration_seconds_count', { subject: 'svc.management.ping' }),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(management, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);

    const ingest = await scrape(proc('events-ingest').healthUrl);
    expect(sample(ingest, 'events_ingested_total', { result: 'created' })).toBeGreaterThanOrEqual(1);
    expect(sample(ingest, 'events_ingested_total', { result: 'duplicate' })).toBeGreaterThanOrEqual(1);

    const dispatcher = proc('webhook-dispatcher').healthUrl;
    await eventually(
      async () => (sample(await scrape(dispatcher), 'webhook_attempts_total', { outcome: 'delivered' }) ?? 0) >= 1,
      'a delivered attempt counted',
    );
    const d = await scrape(dispatcher);
    expect(
      sample(d, 'jetstream_consumer_pending', {
        stream: 'PLATFORM_EVENTS',
        consumer: 'webhook-dispatcher-event-created',
      }),
    ).toBeGreaterThanOrEqual(0);
  }, 120_000);
});

describe('credential cache', () => {
  test('when 20 requests with a new API key arrive at once, then all are accepted and run-auth verifies the key once', async () => {
    const p = aProject();
    const { key } = await anApiKey(stack.admin, p, { agentId: 'cache-agent' });
    const verifications = async () =>
      sample(await scrape(proc('run-auth').healthUrl), 'nats_request_duration_seconds_count', {
        subject: 'svc.run-auth.authenticate',
      }) ?? 0;
    const before = await verifications();
    const run = client(stack.gatewayUrl, key);
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        run.post('/run/v1/events', { id: `cache-${i}`, type: 'cache.tested' }).then((r) => r.status),
      ),
    );
    expect(statuses).toEqual(Array(20).fill(201));
    // The requests that found the key unknown waited for the one verification under way instead of sending their own.
    expect((await verifications()) - before).toBe(1);
  }, 60_000);
});

describe('log redaction', () => {
  test('when every kind of secret is sent through the API at debug level, then none of them appears in any log file', async () => {
    const admin = stack.admin;
    const p = aProject();
    const P = projectPath(p);
    const { key: apiKey } = await anApiKey(admin, p, { agentId: 'redaction-agent' });
    const accessToken = await aTenantToken(admin, p.tenantId);
    const { key: analyticsKey } = await anAnalyticsKey(admin, p);
    const dest = await admin.post(`${P}/webhook-destinations`, {
      name: 'secret-hook',
      url: receiver.url,
      eventTypes: ['event.created'],
    });
    expect(dest.status).toBe(201);
    const webhookSecret = dest.body.data.secret as string;
    const credentialValue = `cred-value-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    expect(
      (await admin.post(`${P}/credential-stores/memory-default/credentials`, { key: 'gh', value: credentialValue }))
        .status,
    ).toBeLessThan(300);
    const session = await http('POST', `${stack.gatewayUrl}/manage/auth/session`, { token: accessToken });
    expect(session.status).toBe(201);
    const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0]!;
    const cookieValue = cookie.split('=')[1]!;

    // Each secret travels through the API: as a credential, in headers, in query strings, in bodies.
    const run = client(stack.gatewayUrl, apiKey);
    expect(
      (
        await run.post(
          '/run/v1/events',
          { id: 'redaction-1', type: 'secret.sent', properties: { note: webhookSecret } },
          { headers: { 'x-webhook-secret': webhookSecret } },
        )
      ).status,
    ).toBe(201);
    expect(
      (await client(stack.gatewayUrl, accessToken).get(`${P}/apps?token=${encodeURIComponent(accessToken)}`)).status,
    ).toBeLessThan(500);
    expect((await http('GET', `${stack.gatewayUrl}${P}/apps`, { cookie })).status).toBe(200);
    expect(
      (
        await client(stack.analyticsUrl, analyticsKey).post('/events', {
          entityType: 'conversation',
          conversationId: 'c-1',
          type: 'conversation.opened',
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await http(
          'GET',
          `${stack.gatewayUrl}${P}/webhook-destinations?secret=${encodeURIComponent(webhookSecret)}&key=${encodeURIComponent(apiKey)}`,
          { token: stack.adminToken },
        )
      ).status,
    ).toBeLessThan(500);
    // Refused credentials are logged too (as failures): a tampered key, token and analytics key.
    expect(
      (await client(stack.gatewayUrl, `${apiKey.slice(0, -2)}xx`).post('/run/v1/events', { type: 'x' })).status,
    ).toBe(401);
    expect((await client(stack.gatewayUrl, `${accessToken.slice(0, -2)}xx`).get(`${P}/apps`)).status).toBe(401);
    expect(
      (
        await client(stack.analyticsUrl, `${analyticsKey.slice(0, -2)}xx`).post('/events', {
          entityType: 'conversation',
          conversationId: 'c-1',
          type: 'x',
        })
      ).status,
    ).toBe(401);

    const secretsSent: Record<string, string> = {
      'admin token': stack.adminToken,
      'API key secret': apiKey.split('.')[1]!,
      'access token secret': accessToken.split('.')[1]!,
      'analytics key secret': analyticsKey.split('.')[1]!,
      'webhook secret': webhookSecret.slice('whsec_'.length),
      'credential value': credentialValue,
      'session cookie': cookieValue,
    };
    // Wait until the debug line of the last request reached the logs, then look for every secret everywhere.
    const allLogs = () =>
      readdirSync(stack.logDir)
        .map((f) => readFileSync(join(stack.logDir, f), 'utf8'))
        .join('\n');
    await eventually(
      () =>
        allLogs().includes('"operation":"createAnalyticsEvent","status":401') ||
        allLogs().split('"status":401').length > 3,
      'the refused requests in the gateway log',
    );
    const logs = allLogs();
    expect(logs).toContain('"level":20');
    const found = Object.entries(secretsSent)
      .filter(([, value]) => logs.includes(value))
      .map(([kind]) => kind);
    expect(found).toEqual([]);
  }, 120_000);
});

describe('readiness and liveness', () => {
  test('when Redis goes away, then run-auth is alive but not ready, the gateway stays ready (its limits fail open), and both are ready again once Redis is back', async () => {
    for (const p of stack.processes) {
      expect((await http('GET', `${p.healthUrl}/healthz`)).status).toBe(200);
      expect((await http('GET', `${p.healthUrl}/readyz`)).status).toBe(200);
    }
    const runAuth = proc('run-auth').healthUrl!;
    const gateway = proc('gateway').healthUrl!;
    await stack.redis!.stop();
    await eventually(async () => (await http('GET', `${runAuth}/readyz`)).status === 503, 'run-auth not ready');
    expect((await http('GET', `${runAuth}/healthz`)).status).toBe(200);
    expect((await http('GET', `${gateway}/readyz`)).status).toBe(200);
    expect((await http('GET', `${stack.gatewayUrl}/readyz`)).status).toBe(200);
    // Services that do not use Redis are unaffected.
    expect((await http('GET', `${proc('events-ingest').healthUrl}/readyz`)).status).toBe(200);

    await stack.redis!.start();
    await eventually(
      async () => (await http('GET', `${runAuth}/readyz`)).status === 200,
      'run-auth ready again',
      20_000,
    );
  });
});
