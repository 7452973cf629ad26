import { aProject, eventually, projectPath, startReceiver, withDatabase, type Receiver } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { anInstalledWorkspace, fake } from '../support/chatapp';
import { createDestination, signatureValid } from '../support/webhooks';

/**
 * Sealed values are bound to their record (docs/security.md, "Sealed values"): someone who can write the database but
 * holds no key (a stolen backup restored, a compromised replica, an operator's slip) cannot move a secret from one
 * record to another and have the platform use it there. The test plays that person: it copies a sealed value onto
 * another record in the service's database, then uses the record through the gateway.
 */
const mongoUrl = stack.env.MONGO_URL!;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

type Project = { tenantId: string; projectId: string };
const destinationKey = (p: Project, id: string) => `${p.tenantId}:${p.projectId}:${id}`;

/** Copies one destination's stored (sealed) signing secret onto another destination, as a database write would. */
async function copySecret(from: { p: Project; id: string }, to: { p: Project; id: string }) {
  await withDatabase(mongoUrl, 'management', async (db) => {
    const destinations = db.collection('webhookDestinations');
    const target = { _id: destinationKey(to.p, to.id) as never };
    const source = await destinations.findOne({ _id: destinationKey(from.p, from.id) as never });
    expect(source?.secret).toEqual(expect.any(String));
    // After the outbox relay's last write to it (FerretDB writes a whole document back: an earlier read would undo ours).
    await eventually(async () => !(await destinations.findOne(target))?.outboxPending, 'the created event relayed');
    const res = await destinations.updateOne(target, { $set: { secret: source!.secret } });
    expect(res.modifiedCount).toBe(1);
  });
}

describe('sealed values open only for their own record', () => {
  test.each([
    ['a destination of another tenant', () => aProject()],
    ['another destination of the same project', (p: Project) => p],
  ])(
    'when a signing secret is copied onto %s in the database, then its test delivery fails with a clear error and nothing is signed with the copied secret',
    async (_what, otherProject) => {
      const p = aProject();
      const victim = await createDestination(admin, p, { url: receiver.url, eventTypes: ['event.created'] });
      const q = otherProject(p);
      const target = await createDestination(admin, q, { url: receiver.url, eventTypes: ['event.created'] });
      await copySecret({ p, id: victim.id }, { p: q, id: target.id });

      const res = await admin.post(`${projectPath(q)}/webhook-destinations/${target.id}/test`);
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        success: false,
        statusCode: null,
        error: expect.stringContaining('was not sealed for this record'),
      });
      // Nothing reached the receiver for the target that the victim's secret verifies.
      const forTarget = receiver.received.filter(
        (r) =>
          (r.json as { data?: { test?: { destinationId?: string } } } | undefined)?.data?.test?.destinationId ===
          target.id,
      );
      expect(forTarget.filter((r) => signatureValid(victim.secret, r))).toEqual([]);
      // The victim's own secret still signs for the victim.
      const own = await admin.post(`${projectPath(p)}/webhook-destinations/${victim.id}/test`);
      expect(own.body.data).toMatchObject({ success: true, error: null });
    },
  );

  test("when a workspace's bot token is copied onto another tenant's workspace in the database, then that workspace acts as if its token were revoked and posts nothing with it", async () => {
    const a = await anInstalledWorkspace();
    const b = await anInstalledWorkspace();
    await withDatabase(mongoUrl, 'chatapp', async (db) => {
      const source = await db.collection('chatWorkspaces').findOne({ _id: a.teamId as never });
      const res = await db
        .collection('chatWorkspaces')
        .updateOne({ _id: b.teamId as never }, { $set: { botTokenSealed: source!.botTokenSealed } });
      expect(res.modifiedCount).toBe(1);
    });

    const health = await b.owner.get(`${b.ws}/health`);
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ healthy: false, error: 'invalid_auth', botId: null });
    await b.owner.post(`${b.ws}/test-message`, { channelId: 'CGENERAL', message: 'sent with the copied token' });
    expect(await fake.messages(a.teamId)).toEqual([]);
    expect(await fake.messages(b.teamId)).toEqual([]);
    // Workspace A's token still works for A.
    expect((await a.owner.get(`${a.ws}/health`)).body).toMatchObject({ healthy: true });
  });
});
