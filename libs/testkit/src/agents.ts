import type { NatsConnection } from 'nats';
import { connectAs } from './nats-auth';
import { requestSubject } from './nats';
import { randomId } from '@platform/secrets';
import type { Client } from './http';
import { projectPath } from './fixtures';
import { testStack } from './fixtures';

/** A small valid full agent: sub-agents `router` and `writer`, one MCP tool, a function tool, an external agent. */
export function aFullAgent(overrides: Record<string, unknown> = {}) {
  const id = (overrides.id as string) ?? `agent-${randomId(8).toLowerCase()}`;
  return {
    id,
    name: 'Support bot',
    description: 'Answers support questions',
    defaultSubAgentId: 'router',
    executionMode: 'classic',
    prompt: 'Be helpful.',
    subAgents: {
      router: {
        id: 'router',
        name: 'Router',
        type: 'internal',
        prompt: 'Route the question.',
        canTransferTo: ['writer'],
        canDelegateTo: ['writer'],
      },
      writer: { id: 'writer', name: 'Writer', type: 'internal', prompt: 'Write the answer.' },
    },
    tools: {
      search: {
        id: 'search',
        name: 'Search',
        config: {
          type: 'mcp',
          mcp: {
            server: { url: 'https://mcp.example.com/mcp' },
            transport: { type: 'streamable_http' },
            activeTools: ['find'],
          },
        },
      },
    },
    functions: { 'fn-sum': { id: 'fn-sum', executeCode: 'return a + b', inputSchema: { type: 'object' } } },
    functionTools: { sum: { id: 'sum', name: 'Sum', description: 'Adds', functionId: 'fn-sum' } },
    externalAgents: { billing: { id: 'billing', name: 'Billing', baseUrl: 'https://billing.example.com/a2a' } },
    teamAgents: { sales: { id: 'sales', name: 'Sales' } },
    ...overrides,
  };
}

export function skillManifest(name: string, description = 'Does a useful thing', extra = ''): string {
  return `---\nname: ${name}\ndescription: ${description}\n${extra}---\n# ${name}\n\nInstructions.\n`;
}

/** A valid skill create body (SKILL.md plus one more file). */
export function aSkillInput(name = `skill-${randomId(8).toLowerCase()}`) {
  return {
    files: [
      { filePath: 'SKILL.md', content: skillManifest(name, 'Does a useful thing', 'metadata:\n  owner: support\n') },
      { filePath: 'scripts/run.sh', content: 'echo hi\n' },
    ],
  };
}

export async function aStoredAgent(
  admin: Client,
  p: { tenantId: string; projectId: string },
  overrides: Record<string, unknown> = {},
) {
  const res = await admin.post(`${projectPath(p)}/agent`, aFullAgent(overrides));
  if (res.status !== 201) throw new Error(`creating an agent failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string; name: string } & Record<string, any>;
}

export async function aStoredSkill(admin: Client, p: { tenantId: string; projectId: string }, name?: string) {
  const res = await admin.post(`${projectPath(p)}/skills`, aSkillInput(name));
  if (res.status !== 201) throw new Error(`creating a skill failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string } & Record<string, any>;
}

/**
 * Creates a credential of the built-in memory store (`memory-default`) in the project; `fields` gives its id, name
 * and, where the test reads the secret, its retrieval parameters.
 */
export async function aMemoryCredential(
  admin: Client,
  p: { tenantId: string; projectId: string },
  fields: { id: string; name: string; retrievalParams?: Record<string, unknown> },
) {
  const res = await admin.post(`${projectPath(p)}/credentials`, {
    ...fields,
    type: 'memory',
    credentialStoreId: 'memory-default',
  });
  if (res.status !== 201) throw new Error(`creating a credential failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string } & Record<string, any>;
}

/** Calls an internal NATS subject of the test stack the way services do, returning the wire reply. */
export function internalRequest(
  subject: string,
  body: unknown,
): Promise<{ ok: boolean; status?: number; body?: any; problem?: any }> {
  return requestSubject(testStack().env.NATS_URL!, subject, body, 5000);
}

/** Collects the events published on `subject` (a core NATS subscription) until closed. */
export async function collectEvents(
  subject: string,
): Promise<{ events: any[]; ready: Promise<void>; close(): Promise<void> }> {
  const nc: NatsConnection = await connectAs(testStack().env.NATS_URL!, 'admin', { name: 'test-events' });
  const events: any[] = [];
  const sub = nc.subscribe(subject);
  void (async () => {
    for await (const m of sub) events.push(JSON.parse(new TextDecoder().decode(m.data)));
  })();
  return { events, ready: nc.flush(), close: () => nc.close() };
}
