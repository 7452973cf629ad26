import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunEvent } from '@platform/contracts';
import { randomId } from '@platform/secrets';
import { client, type Client } from './http';
import { repoRoot } from './infra';

export interface TestStackInfo {
  gatewayUrl: string;
  /** Base URL of the gateway's analytics listener ({analytics_url}). */
  analyticsUrl: string;
  adminToken: string;
  env: Record<string, string>;
  /** Base URL of the chat product fake (libs/testkit/src/fakes/chatapp.ts) the stack's chatapp service talks to. */
  chatappFakeUrl?: string;
  /** Where the stack's processes write their logs (one file each). */
  logDir?: string;
}

/** The stack jest's global setup started (its URLs and admin credential). */
export function testStack(): TestStackInfo {
  return JSON.parse(readFileSync(join(repoRoot, '.infra', 'test-stack.json'), 'utf8')) as TestStackInfo;
}

export function adminClient(info: Pick<TestStackInfo, 'gatewayUrl' | 'adminToken'> = testStack()): Client {
  return client(info.gatewayUrl, info.adminToken);
}

export function uniqueId(prefix: string): string {
  return `${prefix}-${randomId(10).toLowerCase()}`;
}

/**
 * A run event as events-ingest stores it, for tests that write or publish one themselves: a `page.viewed` with every
 * optional field null, created now under a fresh id; `over` names the project and what the test needs otherwise.
 */
export function aRunEvent(over: Partial<RunEvent> & { tenantId: string; projectId: string }): RunEvent {
  const now = new Date().toISOString();
  return {
    id: uniqueId('e'),
    type: 'page.viewed',
    agentId: null,
    conversationId: null,
    messageId: null,
    properties: null,
    userProperties: null,
    metadata: null,
    serverMetadata: { authMethod: 'api_key' },
    createdAt: now,
    updatedAt: now,
    ...over,
  };
}

/** A fresh tenant and project, unique to the calling test. */
export function aProject() {
  return { tenantId: uniqueId('t'), projectId: uniqueId('p') };
}

export const projectPath = (p: { tenantId: string; projectId: string }) =>
  `/manage/tenants/${p.tenantId}/projects/${p.projectId}`;

/**
 * Makes sure the project has an agent with this id (a small one is created when there is none): triggers and API keys
 * are refused for an agent that does not exist.
 */
export async function anAgentNamed(admin: Client, p: { tenantId: string; projectId: string }, agentId: string) {
  const body = {
    id: agentId,
    name: `Agent ${agentId}`,
    defaultSubAgentId: 'main',
    subAgents: { main: { id: 'main', name: 'Main', type: 'internal', prompt: 'Help.' } },
  };
  const res = await admin.post(`${projectPath(p)}/agent`, body);
  if (res.status !== 201 && res.status !== 409)
    throw new Error(`creating agent ${agentId} failed: ${res.status} ${JSON.stringify(res.body)}`);
}

/** A fresh project with these agents (default `agent-1`), for tests of what is bound to an agent (triggers, API keys). */
export async function aProjectWithAgents(admin: Client, ...agentIds: string[]) {
  const p = aProject();
  for (const id of agentIds.length ? agentIds : ['agent-1']) await anAgentNamed(admin, p, id);
  return p;
}

/** Creates an API key through the API (and its agent, when the project has none by that id); returns its value and record. */
export async function anApiKey(
  admin: Client,
  p: { tenantId: string; projectId: string },
  overrides: Record<string, unknown> = {},
) {
  await anAgentNamed(admin, p, (overrides.agentId as string | undefined) ?? 'agent-1');
  const res = await admin.post(`${projectPath(p)}/api-keys`, { agentId: 'agent-1', name: 'test key', ...overrides });
  if (res.status !== 201) throw new Error(`creating an API key failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { key: res.body.data.key as string, apiKey: res.body.data.apiKey as { id: string; agentId: string } };
}

/** A management access token for a tenant (role admin unless told). */
export async function aTenantToken(admin: Client, tenantId: string, role = 'admin') {
  const res = await admin.post(`/manage/tenants/${tenantId}/access-tokens`, { name: 'test', role });
  if (res.status !== 201) throw new Error(`creating an access token failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.token as string;
}

/** Issues an analytics key (for `POST {analytics_url}/events`) through the API and returns its value and record. */
export async function anAnalyticsKey(
  admin: Client,
  p: { tenantId: string; projectId: string },
  overrides: Record<string, unknown> = {},
) {
  const res = await admin.post(`${projectPath(p)}/analytics-keys`, {
    integrationId: 'web-1',
    name: 'test analytics key',
    ...overrides,
  });
  if (res.status !== 201)
    throw new Error(`creating an analytics key failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    key: res.body.data.key as string,
    analyticsKey: res.body.data.analyticsKey as { id: string; integrationId: string },
  };
}
