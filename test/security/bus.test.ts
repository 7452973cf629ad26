import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, credsAuthenticator, type NatsConnection } from 'nats';
import {
  credsIdentity,
  headersOf,
  publisher,
  SIGNATURE_HEADER,
  ServiceBus,
  signRequest,
  readReply,
} from '@platform/bus';
import { subscribe, type Subscription } from '@platform/consumer';
import { createAccessToken, eventCreated, pendingEvent, verifyApiKey } from '@platform/contracts';
import { writeCredentialSet } from '@platform/nats-auth';
import {
  adminApi,
  aProject,
  connectAs,
  eventually,
  gatewayBusKey,
  natsAuthDir,
  repoRoot,
  startNatsServer,
  testStack,
  uniqueId,
  aRunEvent,
} from '@platform/testkit';

/**
 * The bus admits only who belongs (docs/security.md, "The message bus"): against the test stack's nats-server, started
 * with the generated configuration, and the services running with their generated credentials.
 */
const stack = testStack();
const url = stack.env.NATS_URL!;
const api = adminApi(stack);
const opened: NatsConnection[] = [];
const subs: Subscription[] = [];
afterAll(async () => {
  await Promise.all(subs.map((s) => s.stop(1000)));
  await Promise.all(opened.map((nc) => nc.close().catch(() => undefined)));
});

/** `pnpm nats:credentials consumer …` as an operator runs it; answers the file and what the command printed. */
function issueConsumer(args: string[], dir = natsAuthDir()): { file: string; printed: string } {
  const file = join(mkdtempSync(join(tmpdir(), 'consumer-')), 'consumer.creds');
  const printed = execFileSync(
    'pnpm',
    ['--silent', 'nats:credentials', 'consumer', '--dir', dir, ...args, '--out', file],
    { cwd: repoRoot, encoding: 'utf8' },
  );
  return { file, printed };
}

/** A connection with a `.creds` file, as a consumer's program makes it (its own inbox prefix). */
async function connectWith(file: string, server = url): Promise<NatsConnection> {
  const creds = readFileSync(file, 'utf8');
  const nc = await connect({
    servers: server,
    authenticator: credsAuthenticator(new TextEncoder().encode(creds)),
    inboxPrefix: credsIdentity(creds).inboxPrefix,
    maxReconnectAttempts: 0,
  });
  opened.push(nc);
  return nc;
}

/** The permission errors the server sent this connection, as nats.js reports them: `publish evt.x` / `subscription evt.x`. */
function violations(nc: NatsConnection): string[] {
  const seen: string[] = [];
  void (async () => {
    for await (const s of nc.status()) {
      const ctx = (s as { permissionContext?: { operation: string; subject: string } }).permissionContext;
      if (s.type === 'error' && ctx) seen.push(`${ctx.operation} ${ctx.subject}`);
    }
  })();
  return seen;
}

const wire = (principal: unknown, body: unknown, params: unknown) =>
  new TextEncoder().encode(JSON.stringify({ principal, body, params }));

describe('who may connect', () => {
  test('when a client connects without credentials, then the server refuses it', async () => {
    await expect(connect({ servers: url, maxReconnectAttempts: 0, reconnect: false })).rejects.toMatchObject({
      code: 'AUTHORIZATION_VIOLATION',
    });
  });

  test('when a client presents a credential of another operator, then the server refuses it', async () => {
    const foreign = mkdtempSync(join(tmpdir(), 'foreign-nats-'));
    await writeCredentialSet(foreign, { identities: {} });
    await expect(connectWith(join(foreign, 'admin.creds'))).rejects.toMatchObject({ code: 'AUTHORIZATION_VIOLATION' });
  });
});

describe('a tenant-scoped event consumer', () => {
  test("when tenant A's consumer credential is used, then it receives A's events and is refused B's subjects, requests to services and publishing", async () => {
    const a = aProject();
    const b = aProject();
    const { file, printed } = issueConsumer(['--tenant', a.tenantId]);
    const durable = /durable consumers: (\S+)/.exec(printed)![1]!.replace(/,$/, '');
    const nc = await connectWith(file);
    const errors = violations(nc);

    const got: string[] = [];
    subs.push(await subscribe(nc, eventCreated, { durable, tenantId: a.tenantId }, (e) => void got.push(e.tenantId)));
    const admin = await connectAs(url);
    opened.push(admin);
    const mine = pendingEvent(eventCreated, uniqueId('id'), a, { event: aRunEvent(a), dispatch: false });
    const theirs = pendingEvent(eventCreated, uniqueId('id'), b, { event: aRunEvent(b), dispatch: false });
    await publisher(admin).publishPending([theirs, mine]);
    await eventually(() => got.includes(a.tenantId), "tenant A's event to arrive");
    expect(got).not.toContain(b.tenantId);

    // B's events, through a consumer of its own name or another's: the filtered create subject is outside its grant.
    await expect(subscribe(nc, eventCreated, { durable, tenantId: b.tenantId }, () => undefined)).rejects.toThrow(
      /permission/i,
    );
    await expect(
      subscribe(
        nc,
        eventCreated,
        { durable: 'webhook-dispatcher-event-created', tenantId: a.tenantId },
        () => undefined,
      ),
    ).rejects.toThrow(/permission/i);
    // Core subscriptions, requests to services, and publishing anything are refused by the server.
    nc.subscribe(`evt.${b.tenantId}.>`);
    await expect(
      nc.request(
        createAccessToken.subject,
        wire({ kind: 'admin', via: 'bearer' }, { name: 'x' }, { tenantId: a.tenantId }),
        { timeout: 2000 },
      ),
    ).rejects.toThrow();
    nc.publish(`evt.${a.tenantId}.${a.projectId}.event.created.v1`, new Uint8Array());
    const refused = [
      `subscription evt.${b.tenantId}.>`,
      `publish ${createAccessToken.subject}`,
      `publish evt.${a.tenantId}.${a.projectId}.event.created.v1`,
    ];
    await eventually(
      () => refused.every((r) => errors.includes(r)),
      `the three permission violations (saw ${JSON.stringify(errors)})`,
    );
  });

  test('when a project consumer credential is revoked and the server reloads, then its connection is closed and it cannot connect again', async () => {
    // A server and credential set of its own: the revocation rewrites that set's auth.conf.
    const dir = mkdtempSync(join(tmpdir(), 'revoke-nats-'));
    await writeCredentialSet(dir, { identities: {} });
    const config = join(dir, 'server.conf');
    writeFileSync(config, `${readFileSync(join(repoRoot, 'deploy', 'nats.conf'), 'utf8')}\ninclude "auth.conf"\n`);
    const server = await startNatsServer({ config });
    try {
      const p = aProject();
      const { file } = issueConsumer(['--tenant', p.tenantId, '--project', p.projectId], dir);
      const nc = await connectWith(file, server.url);
      const closed = nc.closed();
      execFileSync('pnpm', ['--silent', 'nats:credentials', 'revoke', '--dir', dir, '--creds', file], {
        cwd: repoRoot,
        stdio: 'ignore',
      });
      server.reload();
      await expect(closed).resolves.toBeDefined();
      await expect(connectWith(file, server.url)).rejects.toMatchObject({ code: 'AUTHORIZATION_VIOLATION' });
      // A credential issued after the revocation still works.
      await expect(connectWith(issueConsumer(['--tenant', p.tenantId], dir).file, server.url)).resolves.toBeDefined();
    } finally {
      await server.destroy();
    }
  });
});

describe('service identities', () => {
  test("when run-auth's credential tries to serve or call a management operation, then the server refuses both; its declared call still works", async () => {
    const nc = await connectAs(url, 'run-auth', { maxReconnectAttempts: 0 });
    opened.push(nc);
    const errors = violations(nc);
    nc.subscribe(createAccessToken.subject, { queue: 'management' });
    nc.publish(createAccessToken.subject, wire({ kind: 'admin', via: 'bearer' }, { name: 'x' }, { tenantId: 't' }));
    await eventually(() => errors.length >= 2, `two permission violations (saw ${JSON.stringify(errors)})`);
    expect(errors).toEqual(
      expect.arrayContaining([`subscription ${createAccessToken.subject}`, `publish ${createAccessToken.subject}`]),
    );
    // What run-auth is declared a caller of goes through: management answers (an unknown key is no scope).
    const bus = new ServiceBus(nc, 'run-auth', 5_000);
    await expect(bus.callInternal(verifyApiKey, { key: `sk_${uniqueId('nope')}` })).resolves.toBeDefined();
  });

  test('when a non-gateway identity sends a public operation with a forged admin principal, then it never reaches the service and nothing is created', async () => {
    const { tenantId } = aProject();
    for (const identity of ['webhook-dispatcher', 'chatapp', 'evals', 'events-ingest']) {
      const nc = await connectAs(url, identity, { maxReconnectAttempts: 0 });
      opened.push(nc);
      await expect(
        nc.request(
          createAccessToken.subject,
          wire({ kind: 'admin', via: 'bearer' }, { name: `forged-${identity}` }, { tenantId }),
          { timeout: 2000 },
        ),
      ).rejects.toThrow();
    }
    const listed = await api.listAccessTokens({ params: { tenantId } });
    expect(listed.data).toEqual([]);
  });
});

describe('who sent a public operation', () => {
  test("when an identity the server lets publish anywhere (admin) sends a public operation the gateway did not sign, then the service refuses it (403) and nothing is created; signed with the gateway's key it is served", async () => {
    const { tenantId } = aProject();
    const nc = await connectAs(url, 'admin', { maxReconnectAttempts: 0 });
    opened.push(nc);
    const subject = createAccessToken.subject;
    const payload = (name: string) =>
      JSON.stringify({ principal: { kind: 'admin', via: 'bearer' }, body: { name }, params: { tenantId } });
    const send = async (name: string, signature?: string) => {
      const msg = await nc.request(subject, new TextEncoder().encode(payload(name)), {
        timeout: 5000,
        headers: signature ? headersOf({ [SIGNATURE_HEADER]: signature }) : undefined,
      });
      const reply = readReply(msg);
      return reply.ok ? reply.status : reply.problem.status;
    };
    const key = gatewayBusKey();
    const statuses = {
      unsigned: await send('unsigned'),
      // Signed with another service's key (what run-auth's own key file holds).
      otherServicesKey: await send('other-key', signRequest(key.keyFor('run-auth')!, subject, payload('other-key'))),
      // A signature of another payload: the principal and body are what is signed.
      anotherPayload: await send('tampered', signRequest(key.keyFor('management')!, subject, payload('original'))),
      signed: await send('signed', signRequest(key.keyFor('management')!, subject, payload('signed'))),
    };
    expect(statuses).toEqual({ unsigned: 403, otherServicesKey: 403, anotherPayload: 403, signed: 201 });
    const listed = await api.listAccessTokens({ params: { tenantId } });
    expect(listed.data.map((t) => t.name)).toEqual(['signed']);
  });
});
