import type { NatsConnection } from 'nats';
import { auditRecorded } from '@platform/contracts';
import { subscribe, type EventOf } from '@platform/consumer';
import {
  aProject,
  aTenantToken,
  client,
  connectAs,
  eventually,
  projectPath,
  startReceiver,
  uniqueId,
  type Receiver,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { evalsPath, evaluatorsPath, improvementsPath } from '../support/evals';
import { createDestination } from '../support/webhooks';

/**
 * Changes served under /manage by other services than management (evals, the webhook dispatcher, analytics) are
 * recorded by the service that made them and appear in the tenant's audit log like management's own
 * (docs/security.md, "Audit log").
 */
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

const auditPath = (tenantId: string, query = '') => `/manage/tenants/${tenantId}/audit-log${query}`;
const tokenId = (token: string) => token.slice(3, 15);
const ua = { 'user-agent': 'audit-services-test/1.0' };
type Entry = Record<string, any>;

/** The tenant's entries of other services than management, once `count` of them are there (they arrive from events). */
async function entriesOfServices(tenantId: string, count: number): Promise<Entry[]> {
  return eventually(
    async () => {
      const res = await admin.get(auditPath(tenantId, '?limit=100'));
      expect(res.status).toBe(200);
      const others = (res.body.data as Entry[]).filter((e) => e.service !== 'management');
      return others.length >= count ? others.slice().reverse() : undefined;
    },
    `${count} audit entries of evals, the dispatcher and analytics`,
    30_000,
    150,
  );
}

describe('audit log of changes served outside management', () => {
  test('when an owner makes changes served by evals, the webhook dispatcher and analytics, then each appears once in the tenant log, failed ones as failed, with who, what and from where', async () => {
    const p = aProject();
    const owner = await aTenantToken(admin, p.tenantId, 'owner');
    const c = client(stack.gatewayUrl, owner);
    const P = projectPath(p);
    const dest = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
    const items = `${P}/evals/dataset-items/ds-audit/items`;
    const item = { input: { messages: [{ role: 'user', content: 'hi' }] } };
    const calls: Array<{ operationId: string; service: string; status: number; resourceId?: string }> = [];
    const call = async (
      operationId: string,
      service: string,
      res: Promise<{ status: number; body: any }>,
      resourceId?: string,
    ) => {
      const r = await res;
      calls.push({ operationId, service, status: r.status, ...(resourceId ? { resourceId } : {}) });
      return r;
    };

    const evaluator = await call(
      'createEvaluator',
      'evals',
      c.post(
        evaluatorsPath(p),
        { id: 'ev-audit', name: 'refunds', kind: 'contains', config: { value: 'refund' } },
        { headers: ua },
      ),
      'ev-audit',
    );
    expect(evaluator.status).toBe(201);
    expect(
      (
        await call(
          'updateEvaluator',
          'evals',
          c.patch(`${evaluatorsPath(p)}/ev-audit`, { name: 'refund talk' }, { headers: ua }),
          'ev-audit',
        )
      ).status,
    ).toBe(200);
    expect(
      (await call('deleteEvaluator', 'evals', c.delete(`${evaluatorsPath(p)}/ev-audit`, { headers: ua }), 'ev-audit'))
        .status,
    ).toBe(204);
    const created = await call(
      'createDatasetItem',
      'evals',
      c.post(items, { id: 'item-audit', ...item }, { headers: ua }),
      'item-audit',
    );
    expect(created.status).toBe(201);
    expect(
      (
        await call(
          'updateDatasetItem',
          'evals',
          c.patch(`${items}/item-audit`, { expectedOutput: null }, { headers: ua }),
          'item-audit',
        )
      ).status,
    ).toBe(200);
    expect(
      (await call('deleteDatasetItem', 'evals', c.delete(`${items}/item-audit`, { headers: ua }), 'item-audit')).status,
    ).toBe(204);
    expect(
      (await call('createDatasetItemsBulk', 'evals', c.post(`${items}/bulk`, [item, item], { headers: ua }))).status,
    ).toBe(201);
    // Refused by evals after the request was valid: recorded as failed.
    expect(
      (
        await call(
          'evaluateConversation',
          'evals',
          c.post(`${evalsPath(p)}/evaluate-conversation`, { conversationId: 'conv-none' }, { headers: ua }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await call(
          'evaluateConversations',
          'evals',
          c.post(
            `${evalsPath(p)}/evaluate-conversations`,
            { conversationIds: ['conv-none'], evaluatorIds: ['ev-none'] },
            { headers: ua },
          ),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await call(
          'triggerImprovement',
          'evals',
          c.post(`${improvementsPath(p)}/trigger`, { feedbackIds: ['fb-none'] }, { headers: ua }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await call(
          'createCopilotRun',
          'evals',
          c.post(`${improvementsPath(p)}/copilot-runs`, { conversationId: 'copilot-audit' }, { headers: ua }),
        )
      ).status,
    ).toBe(201);
    expect(
      (
        await call(
          'continueImprovement',
          'evals',
          c.post(`${improvementsPath(p)}/improvement_none_2026/continue`, { message: 'more' }, { headers: ua }),
          'improvement_none_2026',
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await call(
          'mergeImprovement',
          'evals',
          c.post(`${improvementsPath(p)}/improvement_none_2026/merge`, undefined, { headers: ua }),
          'improvement_none_2026',
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await call(
          'rejectImprovement',
          'evals',
          c.post(`${improvementsPath(p)}/improvement_none_2026/reject`, undefined, { headers: ua }),
          'improvement_none_2026',
        )
      ).status,
    ).toBe(404);

    const tested = await call(
      'testWebhookDestination',
      'webhook-dispatcher',
      c.post(`${P}/webhook-destinations/${dest.id}/test`, undefined, { headers: ua }),
      dest.id,
    );
    expect(tested.body.data).toMatchObject({ success: true });
    expect(
      (
        await call(
          'redeliverWebhookDelivery',
          'webhook-dispatcher',
          c.post(`${P}/webhook-destinations/${dest.id}/deliveries/msg_none/redeliver`, undefined, { headers: ua }),
          'msg_none',
        )
      ).status,
    ).toBe(404);
    const since = new Date(Date.now() - 60_000).toISOString();
    expect(
      (
        await call(
          'recoverWebhookDeliveries',
          'webhook-dispatcher',
          c.post(`${P}/webhook-destinations/${dest.id}/recover`, { since }, { headers: ua }),
          dest.id,
        )
      ).status,
    ).toBe(202);

    const key = await call(
      'createAnalyticsKey',
      'analytics',
      c.post(`${P}/analytics-keys`, { integrationId: 'docs', name: 'widget' }, { headers: ua }),
    );
    expect(key.status).toBe(201);
    const keyId = key.body.data.analyticsKey.id as string;
    expect(
      (await call('deleteAnalyticsKey', 'analytics', c.delete(`${P}/analytics-keys/${keyId}`, { headers: ua }), keyId))
        .status,
    ).toBe(204);

    const entries = await entriesOfServices(p.tenantId, calls.length);
    // Once each, in the order they were made.
    expect(entries.map((e) => e.operationId)).toEqual(calls.map((x) => x.operationId));
    entries.forEach((e, i) => {
      const made = calls[i]!;
      expect(e).toMatchObject({
        tenantId: p.tenantId,
        projectId: p.projectId,
        service: made.service,
        status: made.status,
        outcome: made.status < 400 ? 'succeeded' : 'failed',
        errorCode: made.status < 400 ? null : 'not_found',
        actor: { kind: 'user', role: 'owner', credentialId: tokenId(owner), via: 'bearer' },
        source: { ip: expect.any(String), userAgent: ua['user-agent'], requestId: expect.stringMatching(/.+/) },
        completedAt: expect.any(String),
        ...(made.resourceId ? { resourceId: made.resourceId } : {}),
      });
    });
    const byOp = Object.fromEntries(entries.map((e) => [e.operationId, e]));
    expect(byOp.createEvaluator).toMatchObject({
      resourceType: 'evaluators',
      before: null,
      after: { id: 'ev-audit', name: 'refunds' },
    });
    expect(byOp.updateEvaluator).toMatchObject({
      before: { id: 'ev-audit', name: 'refunds' },
      after: { name: 'refund talk' },
    });
    expect(byOp.deleteEvaluator).toMatchObject({ method: 'delete', before: { name: 'refund talk' }, after: null });
    expect(byOp.testWebhookDestination).toMatchObject({
      resourceType: 'webhook-destinations',
      after: { success: true },
    });
    // The analytics key's secret is never in the log.
    expect(byOp.createAnalyticsKey).toMatchObject({
      resourceType: 'analytics-keys',
      resourceId: keyId,
      after: { key: '[redacted]' },
    });
    expect(JSON.stringify(entries)).not.toContain(key.body.data.key.split('.')[1]);
    // Filters work on them as on management's entries.
    const byService = await c.get(auditPath(p.tenantId, '?operationId=deleteEvaluator'));
    expect(byService.body.data.map((e: Entry) => e.id)).toEqual([byOp.deleteEvaluator.id]);
    const failed = await c.get(auditPath(p.tenantId, '?outcome=failed&limit=100'));
    expect(failed.body.data.map((e: Entry) => e.operationId).sort()).toEqual(
      calls
        .filter((x) => x.status >= 400)
        .map((x) => x.operationId)
        .sort(),
    );
  }, 60_000);

  test('when another tenant reads its own log, then it never sees these entries, and it may not read the other log', async () => {
    const a = aProject();
    const b = aProject();
    expect(
      (await admin.post(`${evaluatorsPath(a)}`, { id: 'ev-a', name: 'of a', kind: 'contains', config: { value: 'x' } }))
        .status,
    ).toBe(201);
    await entriesOfServices(a.tenantId, 1);
    const asB = client(stack.gatewayUrl, await aTenantToken(admin, b.tenantId, 'owner'));
    expect(
      (await asB.post(`${evaluatorsPath(b)}`, { id: 'ev-b', name: 'of b', kind: 'contains', config: { value: 'y' } }))
        .status,
    ).toBe(201);
    const own = await entriesOfServices(b.tenantId, 1);
    expect(own.map((e) => [e.tenantId, e.resourceId])).toEqual([[b.tenantId, 'ev-b']]);
    const all = await asB.get(auditPath(b.tenantId, '?limit=100'));
    expect(JSON.stringify(all.body)).not.toContain(a.tenantId);
    expect((await asB.get(auditPath(a.tenantId))).status).toBe(403);
  });

  test("when evals records a change, then its audit.recorded event reaches a typed consumer of the tenant once, like management's", async () => {
    const p = aProject();
    const got: Array<EventOf<typeof auditRecorded>> = [];
    const nc: NatsConnection = await connectAs(stack.env.NATS_URL!, 'admin');
    const sub = await subscribe(
      nc,
      auditRecorded,
      { durable: uniqueId('audit-evals').replace(/\./g, '_'), tenantId: p.tenantId, deliverPolicy: 'new' },
      (e) => void got.push(e),
    );
    try {
      expect(
        (
          await admin.post(evaluatorsPath(p), {
            id: 'ev-evt',
            name: 'evented',
            kind: 'contains',
            config: { value: 'z' },
          })
        ).status,
      ).toBe(201);
      const [entry] = await entriesOfServices(p.tenantId, 1);
      const e = await eventually(() => got.find((x) => x.id === entry!.id), 'the audit.recorded event of evals');
      expect(e).toMatchObject({
        type: 'audit.recorded',
        tenantId: p.tenantId,
        projectId: p.projectId,
        data: { entry: { ...entry, service: 'evals' } },
      });
      expect(got.filter((x) => x.id === entry!.id)).toHaveLength(1);
    } finally {
      await sub.stop(1000);
      await nc.drain();
    }
  });
});
