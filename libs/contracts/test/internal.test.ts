import {
  BACKEND_SERVICES,
  WEBHOOK_EVENT_TYPES,
  allOperations,
  durables,
  healthSubject,
  internalCalls,
  notices,
  streams,
  webhookEvents,
} from '../src';

test('every internal call has a subject of its own, under its owner, that no public operation uses', () => {
  const publicSubjects = new Set(allOperations.map((op) => op.subject));
  for (const call of internalCalls) {
    expect(call.subject.startsWith(`svc.${call.owner}.`)).toBe(true);
    expect(publicSubjects.has(call.subject)).toBe(false);
  }
  expect(new Set(internalCalls.map((c) => c.subject)).size).toBe(internalCalls.length);
});

test('each service that boots through the runtime has its health call, which the gateway may call', () => {
  const health = internalCalls.filter((c) => c.subject === healthSubject(c.owner));
  expect(health.map((c) => c.owner).sort()).toEqual([...BACKEND_SERVICES].sort());
  for (const c of health) expect(c.callers).toEqual(['gateway']);
});

test('the playground token is verified by one declaration, served by management and called by run-auth', () => {
  const verify = internalCalls.filter((c) => c.subject === 'svc.management.playground.verify');
  expect(verify).toMatchObject([
    { name: 'verifyPlaygroundToken', owner: 'management', callers: ['run-auth'], carriesSecret: true },
  ]);
});

test('every notice has a subscriber, and only a tap of stored events goes without a publisher', () => {
  for (const n of notices) {
    expect(n.subscribers.length).toBeGreaterThan(0);
    if (n.publishers.length === 0) expect(n.subject.startsWith('evt.')).toBe(true);
  }
});

test('every durable is on a declared stream, and the dispatcher has one per webhook event', () => {
  const names = new Set(streams.map((s) => s.name));
  for (const d of durables) expect(names.has(d.stream)).toBe(true);
  const perEvent = durables.filter((d) => d.stream === 'PLATFORM_EVENTS' && d.service === 'webhook-dispatcher');
  expect(perEvent).toHaveLength(webhookEvents.length);
  expect(perEvent.map((d) => d.durable)).toContain('webhook-dispatcher-conversation-created');
});

test('the event types a webhook destination may subscribe to are the webhook events the dispatcher consumes', () => {
  expect([...WEBHOOK_EVENT_TYPES].sort()).toEqual(webhookEvents.map((e) => e.name).sort());
});
