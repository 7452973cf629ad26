import { spawn } from 'node:child_process';
import { createCipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { BackendServiceName } from '@platform/contracts';
import { randomSecret } from '@platform/secrets';
import {
  aMemoryCredential,
  anAgentNamed,
  aProject,
  chatappFake,
  dropDatabases,
  eventually,
  http,
  installChatWorkspace,
  localSecrets,
  projectPath,
  repoRoot,
  startChatappFake,
  startPrivateStack,
  startReceiver,
  withDatabase,
  type ChatappFakeServer,
  type PrivateStack,
  type Receiver,
} from '@platform/testkit';
import { createDestination, signatureValid } from '../support/webhooks';

/**
 * Rotating the sealing key without downtime (docs/security.md, "Sealed values"), through the real services: values
 * sealed under key A; the services restarted with ENCRYPTION_KEYS=B,A read them all; `pnpm secrets:reencrypt` seals
 * them again under B (and converts a value of the format before bindings); restarted with B alone (and values of the
 * format before refused), every value still reads. One database set across the three stacks, as a deployment keeps its database across releases.
 */
const KEY_A = randomSecret(32);
const KEY_B = randomSecret(32);
const SERVICES: BackendServiceName[] = ['management', 'webhook-dispatcher', 'chatapp', 'credential-gateway'];
const secrets = { ...localSecrets(), ENCRYPTION_KEYS: '' };
const dbPrefix = `rotation${Date.now().toString(36)}`;
const TRIGGER_SECRET = 'trigger-signing-secret-0123456789';

let chat: ChatappFakeServer;
let receiver: Receiver;
let stack: PrivateStack | undefined;

async function startWith(keys: string, env: Record<string, string> = {}): Promise<PrivateStack> {
  await stack?.stop();
  stack = await startPrivateStack({
    name: 'rotation',
    services: SERVICES,
    dbPrefix,
    keepDatabases: true,
    secrets: { ...secrets, ENCRYPTION_KEYS: keys },
    env: {
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      CHATAPP_API_URL: chat.apiUrl,
      CHATAPP_AUTHORIZE_URL: chat.authorizeUrl,
      CHATAPP_CLIENT_ID: chat.clientId,
      CHATAPP_CLIENT_SECRET: chat.clientSecret,
      CHATAPP_RESULT_URL: 'http://127.0.0.1/chatapp-result',
      CHATAPP_LINK_URL: 'http://127.0.0.1/chatapp-link',
      ...env,
    },
  });
  return stack;
}

beforeAll(async () => {
  chat = await startChatappFake();
  receiver = await startReceiver();
});

afterAll(async () => {
  const mongoUrl = stack?.env.MONGO_URL;
  await stack?.stop();
  // Every stack kept the databases (a deployment keeps its data across releases): they go with the test.
  if (mongoUrl) await dropDatabases(mongoUrl, dbPrefix);
  await receiver?.close();
  await chat?.close();
}, 120_000);

/** A value as the release before bindings sealed it (`v1.<iv>.<tag>.<ct>`, no associated data). */
function legacySeal(key: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', createHash('sha256').update(key).digest(), iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join(
    '.',
  );
}

/** `pnpm secrets:reencrypt`, as an operator runs it against the stack's databases. */
/**
 * Runs `pnpm secrets:reencrypt` as a child process without blocking this process (a blocked event loop let the
 * gateway close an idle keep-alive connection that the next request was then sent on).
 */
function reencrypt(keys: string, ...args: string[]): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(repoRoot, 'scripts', 'secrets-reencrypt.ts'), ...args],
      {
        cwd: repoRoot,
        timeout: 120_000,
        env: {
          PATH: process.env.PATH,
          MONGO_URL: stack!.env.MONGO_URL,
          MONGO_DB_PREFIX: dbPrefix,
          ENCRYPTION_KEYS: keys,
        },
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, out }));
  });
}

type Project = { tenantId: string; projectId: string };
interface Sealed {
  p: Project;
  destinations: Array<{ id: string; secret: string }>;
  teamId: string;
  /** The trigger's webhook path (each stack's gateway has its own port). */
  triggerPath: string;
  kids: string[];
}

const jwksKids = async (s: PrivateStack) =>
  ((await http('GET', `${s.gatewayUrl}/credential-gateway/.well-known/jwks.json`)).body.keys as Array<{ kid: string }>)
    .map((k) => k.kid)
    .sort();

/** Every sealed value in use through the gateway: signing secrets sign, the bot token works, the trigger's credential verifies. */
async function expectAllRead(s: PrivateStack, v: Sealed) {
  for (const d of v.destinations) {
    const res = await s.admin.post(`${projectPath(v.p)}/webhook-destinations/${d.id}/test`);
    expect({ id: d.id, ...res.body.data }).toMatchObject({ id: d.id, success: true, error: null });
    const [delivery] = await receiver.waitFor(
      (r) => r.json?.data?.test?.destinationId === d.id && r.headers['webhook-id'] === res.body.data.deliveryId,
    );
    expect({ id: d.id, verifies: signatureValid(d.secret, delivery!) }).toEqual({ id: d.id, verifies: true });
  }
  expect((await s.admin.get(`/work-apps/chatapp/workspaces/${v.teamId}/health`)).body).toMatchObject({
    healthy: true,
    error: null,
  });
  const body = JSON.stringify({ n: randomBytes(4).toString('hex') });
  const signature = `sha256=${createHmac('sha256', TRIGGER_SECRET).update(body).digest('hex')}`;
  const call = await http('POST', `${s.gatewayUrl}${v.triggerPath}`, {
    raw: body,
    headers: { 'content-type': 'application/json', 'X-Hub-Signature-256': signature },
  });
  expect(call.status).toBe(202);
  // The credential gateway opened its signing key: the same key set, no new key made for want of the old one.
  expect(await jwksKids(s)).toEqual(v.kids);
}

test('when the sealing key is rotated (A; then B,A and pnpm secrets:reencrypt; then B alone), then every sealed value reads at each step and the command is idempotent', async () => {
  // 1. Everything sealed under A.
  let s = await startWith(KEY_A);
  const p = aProject();
  const P = projectPath(p);
  const d1 = await createDestination(s.admin, p, { url: receiver.url, eventTypes: ['event.created'] });
  // A destination whose secret is stored as the release before bindings stored it.
  const d2 = await createDestination(s.admin, p, { url: receiver.url, eventTypes: ['event.created'] });
  const legacySecret = `whsec_${randomBytes(32).toString('base64')}`;
  const d2Key = { _id: `${p.tenantId}:${p.projectId}:${d2.id}` as never };
  await withDatabase(
    s.env.MONGO_URL!,
    'management',
    async (db) => {
      const destinations = db.collection('webhookDestinations');
      // After the outbox relay's last write to it (FerretDB writes a whole document back: an earlier read would undo ours).
      await eventually(async () => !(await destinations.findOne(d2Key))?.outboxPending, 'the created event relayed');
      expect(
        (await destinations.updateOne(d2Key, { $set: { secret: legacySeal(KEY_A, legacySecret) } })).modifiedCount,
      ).toBe(1);
    },
    dbPrefix,
  );
  const team = await chatappFake(chat.url).createTeam({});
  await installChatWorkspace(s.gatewayUrl, {
    token: s.adminToken,
    tenantId: p.tenantId,
    projectId: p.projectId,
    teamId: team.teamId,
  });
  expect(
    (
      await s.admin.post(`${P}/credential-stores/memory-default/credentials`, {
        key: 'signing-key',
        value: TRIGGER_SECRET,
      })
    ).status,
  ).toBe(201);
  await aMemoryCredential(s.admin, p, {
    id: 'signing',
    name: 'signing secret',
    retrievalParams: { key: 'signing-key' },
  });
  await anAgentNamed(s.admin, p, 'agent-1');
  const trigger = await s.admin.post(`${P}/agents/agent-1/triggers`, {
    name: 'hook',
    signingSecretCredentialReferenceId: 'signing',
    signatureVerification: {
      algorithm: 'sha256',
      encoding: 'hex',
      signature: { source: 'header', key: 'X-Hub-Signature-256', prefix: 'sha256=' },
    },
  });
  expect(trigger.status).toBe(201);
  const sealed: Sealed = {
    p,
    destinations: [d1, { id: d2.id, secret: legacySecret }],
    teamId: team.teamId,
    triggerPath: new URL(trigger.body.data.webhookUrl).pathname,
    kids: await jwksKids(s),
  };
  expect(sealed.kids).toHaveLength(1);
  await expectAllRead(s, sealed);

  // 2. B first, A still listed: old values read, new ones are sealed under B.
  s = await startWith(`${KEY_B},${KEY_A}`);
  await expectAllRead(s, sealed);
  const d3 = await createDestination(s.admin, p, { url: receiver.url, eventTypes: ['event.created'] });
  sealed.destinations.push(d3);
  // What is not under B yet: two destination secrets (one of the format before), the store entry, the bot token, the signing key.
  const check = await reencrypt(`${KEY_B},${KEY_A}`, '--check');
  expect(check.status).toBe(1);
  expect(check.out).toContain(
    'management webhookDestinations: 3 sealed values, 2 not under the newest key, 0 do not open',
  );
  const run = await reencrypt(`${KEY_B},${KEY_A}`);
  expect(run).toEqual({ status: 0, out: expect.stringContaining('Every sealed value is under the newest key') });
  expect(run.out).toContain(
    'management webhookDestinations: 3 sealed values, 2 sealed again under the newest key, 0 do not open, 0 changed meanwhile',
  );
  expect(run.out).toContain('management credentialStoreEntries: 1 sealed values, 1 sealed again under the newest key');
  expect(run.out).toContain('chatapp chatWorkspaces: 1 sealed values, 1 sealed again under the newest key');
  expect(run.out).toContain('credential-gateway signingKeys: 1 sealed values, 1 sealed again under the newest key');
  // Idempotent: nothing left to do.
  const again = await reencrypt(`${KEY_B},${KEY_A}`);
  expect(again.status).toBe(0);
  expect(again.out.match(/ 0 sealed again under the newest key/g)).toHaveLength(4);
  await expectAllRead(s, sealed);

  // 3. A dropped, and values of the format before refused (none is left): everything still reads.
  s = await startWith(KEY_B, { ENCRYPTION_ACCEPT_UNBOUND: 'false' });
  await expectAllRead(s, sealed);
  expect((await reencrypt(KEY_B, '--check')).status).toBe(0);
}, 600_000);
