import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import {
  envelope,
  evaluationFailed,
  eventCreated,
  feedbackCreated,
  conversationToolError,
  type DispatchDestination,
} from '@platform/contracts';
import { aRunEvent } from '@platform/testkit';
import { classifyStatus, maxAttempts, nextRetryDelay, parseRetryAfter } from '../src/domain/retry-policy';
import { signedHeaders } from '../src/domain/signing';
import { matches, signingSecrets } from '../src/domain/destinations';
import { MalformedEvent, routeEvent } from '../src/domain/families';
import { jobFromLegacy } from '../src/domain/jobs';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const scope = { tenantId: 't1', projectId: 'p1' };

function destination(over: Partial<DispatchDestination> = {}): DispatchDestination {
  return {
    id: 'd1',
    name: 'd',
    description: null,
    enabled: true,
    eventTypes: ['event.created'],
    agentIds: [],
    evaluatorIds: [],
    headers: {},
    url: 'https://example.com/hook',
    chatappChannelId: null,
    disabledReason: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    tenantId: 't1',
    projectId: 'p1',
    sealedSecret: null,
    sealedPreviousSecret: null,
    previousSecretExpiresAt: null,
    ...over,
  };
}

describe('retry policy', () => {
  const policy = { scheduleMs: [5_000, 300_000, 1_800_000], jitter: 0.2 };

  test('when an attempt fails, then the next delay follows the schedule within the jitter band, and none is left after the last step', () => {
    expect(maxAttempts(policy)).toBe(4);
    expect(nextRetryDelay(policy, 1, undefined, () => 0)).toBe(4_000);
    expect(nextRetryDelay(policy, 1, undefined, () => 1)).toBe(6_000);
    expect(nextRetryDelay(policy, 2, undefined, () => 0.5)).toBe(300_000);
    expect(nextRetryDelay(policy, 3, undefined, () => 0.5)).toBe(1_800_000);
    expect(nextRetryDelay(policy, 4)).toBeNull();
  });

  test('when the receiver sends Retry-After, then the retry waits at least that long but never beyond the longest step', () => {
    expect(nextRetryDelay(policy, 1, 60_000, () => 0.5)).toBe(60_000);
    expect(nextRetryDelay(policy, 1, 10 * 24 * 3600_000, () => 0.5)).toBe(1_800_000);
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter(new Date(Date.now() + 30_000).toUTCString())).toBeGreaterThan(20_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });

  test.each([
    [200, 'delivered'],
    [204, 'delivered'],
    [500, 'retryable'],
    [503, 'retryable'],
    [429, 'retryable'],
    [408, 'retryable'],
    [410, 'gone'],
    [400, 'permanent'],
    [404, 'permanent'],
    [301, 'permanent'],
    [302, 'permanent'],
  ])('when the receiver answers %i, then the attempt counts as %s', (status, kind) => {
    expect(classifyStatus(status)).toBe(kind);
  });
});

describe('signing', () => {
  test('when a delivery is signed, then the standardwebhooks reference library verifies it', () => {
    const secret = newSecret();
    const body = JSON.stringify({ type: 'event.created', data: { n: 1 } });
    const headers = signedHeaders('msg_abc', body, [secret]);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body.replace('1', '2'), headers)).toThrow();
  });

  test('when two secrets sign (rotation grace), then a receiver holding either one verifies', () => {
    const [oldSecret, newOne] = [newSecret(), newSecret()];
    const body = '{"x":1}';
    const headers = signedHeaders('msg_rot', body, [newOne, oldSecret]);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(() => new Webhook(oldSecret).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(newOne).verify(body, headers)).not.toThrow();
  });

  test('when the previous secret has expired, then only the current one signs', () => {
    const open = (s: string) => s.replace('sealed:', '');
    const d = destination({
      sealedSecret: 'sealed:new',
      sealedPreviousSecret: 'sealed:old',
      previousSecretExpiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(signingSecrets(d, open)).toEqual(['new', 'old']);
    expect(signingSecrets({ ...d, previousSecretExpiresAt: new Date(Date.now() - 1).toISOString() }, open)).toEqual([
      'new',
    ]);
  });
});

describe('routing', () => {
  const runEvent = aRunEvent({
    id: 'e1',
    tenantId: 't1',
    projectId: 'p1',
    agentId: 'a1',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  });

  test('when an event.created may be dispatched, then the envelope carries the event and its agent scope', () => {
    const r = routeEvent(
      envelope(eventCreated, 'x1', scope, { event: runEvent, dispatch: true }, '2026-01-02T00:00:00.000Z'),
    );
    expect(r).toMatchObject({
      type: 'event.created',
      agentId: 'a1',
      envelope: {
        type: 'event.created',
        timestamp: '2026-01-02T00:00:00.000Z',
        tenantId: 't1',
        projectId: 'p1',
        agentId: 'a1',
        data: { event: { id: 'e1' } },
      },
    });
    expect(r!.envelope.data).not.toHaveProperty('dispatch');
    expect(routeEvent(envelope(eventCreated, 'x2', scope, { event: runEvent, dispatch: false }))).toBeNull();
  });

  test('when feedback, evaluation and conversation events arrive, then each family finds its agent (and evaluator) scope', () => {
    const fb = routeEvent(
      envelope(feedbackCreated, 'f1', scope, {
        feedback: { id: 'fb1', conversationId: 'c1', type: 'negative', agentId: 'a2', createdAt: 'x', updatedAt: 'x' },
        conversation: { id: 'c1' },
      }),
    );
    expect(fb).toMatchObject({
      agentId: 'a2',
      envelope: { data: { feedback: { id: 'fb1' }, conversation: { id: 'c1' } } },
    });
    expect(fb).not.toHaveProperty('evaluatorId');

    const ev = routeEvent(
      envelope(evaluationFailed, 'v1', scope, {
        evaluator: { id: 'ev1', name: 'Tone' },
        conversation: { id: 'c1', agentId: 'a3' },
        failedConditions: [{ field: 'score', operator: '>=', value: 3, actual: 1 }],
        resultId: 'r1',
        agentName: 'Support bot',
      }),
    );
    expect(ev).toMatchObject({
      agentId: 'a3',
      evaluatorId: 'ev1',
      envelope: { agentName: 'Support bot', data: { evaluator: { id: 'ev1' } } },
    });
    expect(ev!.envelope.data).not.toHaveProperty('agentName');

    const conv = routeEvent(
      envelope(conversationToolError, 'c1', scope, {
        conversation: { id: 'c9', agentId: 'a4' },
        error: { message: 'tool x failed' },
      }),
    );
    expect(conv).toMatchObject({
      type: 'conversation.tool.error',
      agentId: 'a4',
      envelope: { data: { error: { message: 'tool x failed' } } },
    });
  });

  test('when an event does not match its declaration, then it is reported as malformed', () => {
    expect(() => routeEvent(envelope(feedbackCreated, 'bad', scope, { nothing: true }))).toThrow(MalformedEvent);
  });

  test('when destinations are scoped, then agent and evaluator scopes and the enabled flag decide', () => {
    const all = destination({ eventTypes: ['evaluation.failed', 'event.created'] });
    expect(matches(all, 'event.created', null)).toBe(true);
    expect(matches(all, 'feedback.created', 'a1')).toBe(false);
    expect(matches({ ...all, enabled: false }, 'event.created', 'a1')).toBe(false);
    const agents = { ...all, agentIds: ['a1'] };
    expect(matches(agents, 'event.created', 'a1')).toBe(true);
    expect(matches(agents, 'event.created', 'a2')).toBe(false);
    expect(matches(agents, 'event.created', null)).toBe(false);
    const evaluators = { ...all, evaluatorIds: ['ev1'] };
    expect(matches(evaluators, 'evaluation.failed', 'a1', 'ev1')).toBe(true);
    expect(matches(evaluators, 'evaluation.failed', 'a1', 'ev2')).toBe(false);
    expect(matches(evaluators, 'event.created', 'a1')).toBe(true);
  });
});

describe('hand-over of the deliveries collection (pnpm migrate)', () => {
  const stored = {
    _id: 'msg_1',
    tenantId: 't1',
    projectId: 'p1',
    destinationId: 'd1',
    eventId: 'ev1',
    eventType: 'event.created',
    body: '{"type":"event.created"}',
    attemptCount: 2,
    nextAttemptAt: new Date('2026-01-01T00:05:00.000Z'),
    createdAt: new Date('2026-01-01T00:00:00.000Z'),
  };

  test('when a stored delivery is pending, then its job is the next attempt under the same webhook id, due when it was due', () => {
    expect(
      jobFromLegacy({ ...stored, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }),
    ).toEqual({
      id: 'msg_1',
      tenantId: 't1',
      projectId: 'p1',
      destinationId: 'd1',
      eventId: 'ev1',
      eventType: 'event.created',
      body: '{"type":"event.created"}',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      createdAt: '2026-01-01T00:00:00.000Z',
      attempt: 3,
      dueAt: '2026-01-01T00:05:00.000Z',
    });
  });

  test('when a stored delivery has no due time and no trace, then its job is due now and carries no traceparent', () => {
    const before = Date.now();
    const job = jobFromLegacy({ ...stored, nextAttemptAt: null });
    expect(job).not.toHaveProperty('traceparent');
    expect(Date.parse(job.dueAt ?? '')).toBeGreaterThanOrEqual(before);
  });
});
