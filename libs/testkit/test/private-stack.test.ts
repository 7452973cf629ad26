import mongoose from 'mongoose';
import { anAgentNamed, ensureInfra, http, startPrivateStack, testStack } from '../src';

/** The databases of a prefix that exist on the server right now. */
async function databasesOf(prefix: string): Promise<string[]> {
  const conn = mongoose.createConnection(ensureInfra().MONGO_URL, { maxPoolSize: 1 });
  try {
    await conn.asPromise();
    const { databases } = await conn.db!.admin().listDatabases({ nameOnly: true });
    return databases.map((d) => d.name).filter((n) => n.startsWith(`${prefix}_`));
  } finally {
    await conn.close();
  }
}

// Two stacks on one database relay each other's outbox entries (each process's sweep publishes every pending entry it
// finds, onto its own NATS): the shared test stack's evals once worked a private stack's evaluation items without
// an LLM and failed them. A private stack therefore keeps its data to itself, and takes it with it.
test('when a private stack runs, then its databases are its own and its private servers and databases are gone after stop', async () => {
  const stack = await startPrivateStack({ name: 'pstack', services: ['management'], privateRedis: true });
  let stopped = false;
  try {
    expect(stack.dbPrefix).not.toBe(testStack().env.MONGO_DB_PREFIX);
    expect(stack.env.MONGO_DB_PREFIX).toBe(stack.dbPrefix);
    expect(stack.natsUrl).not.toBe(testStack().env.NATS_URL);
    expect(stack.env.REDIS_URL).toBe(stack.redis!.url);
    // Something stored through the API, so its database exists.
    await anAgentNamed(stack.admin, { tenantId: 't-pstack', projectId: 'p-pstack' }, 'a');
    const res = await stack.admin.post('/manage/tenants/t-pstack/projects/p-pstack/api-keys', {
      agentId: 'a',
      name: 'k',
    });
    expect(res.status).toBe(201);
    expect(await databasesOf(stack.dbPrefix)).toContain(`${stack.dbPrefix}_management`);
    let calls = 0;
    stack.onStop(() => calls++);
    await stack.stop();
    stopped = true;
    await stack.stop();
    expect(calls).toBe(1);
    expect(await databasesOf(stack.dbPrefix)).toEqual([]);
    expect(await http('GET', `${stack.gatewayUrl}/ping`).catch(() => 'refused')).toBe('refused');
  } finally {
    if (!stopped) await stack.stop();
  }
}, 300_000);
