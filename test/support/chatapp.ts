import {
  adminClient,
  aProject,
  aStoredAgent,
  chatappFake,
  client,
  installChatWorkspace,
  testStack,
  type FakeChannel,
} from '@platform/testkit';

export const stack = testStack();
export const admin = adminClient(stack);
export const fake = chatappFake(stack.chatappFakeUrl!);
export const CHAT = '/work-apps/chatapp';

/** A management client for a tenant with a role, acting as `userId`. */
export async function tenantClient(tenantId: string, role: string, userId: string) {
  const res = await admin.post(`/manage/tenants/${tenantId}/access-tokens`, { name: 'chat test', role, userId });
  if (res.status !== 201) throw new Error(`access token: ${res.status} ${JSON.stringify(res.body)}`);
  return client(stack.gatewayUrl, res.body.data.token as string);
}

/** The agents the chat tests name, stored in the project (channel and workspace agents must exist). */
export const CHAT_AGENTS = ['support-bot', 'other-bot', 'next-bot', 'bot', 'helper', 'front-desk'];

export async function withChatAgents(p: { tenantId: string; projectId: string }) {
  await Promise.all(CHAT_AGENTS.map((id) => aStoredAgent(admin, p, { id, name: id })));
  return p;
}

/** A fresh tenant and project with a workspace of the fake installed, and an admin client of that tenant. */
export async function anInstalledWorkspace(channels?: FakeChannel[]) {
  const p = await withChatAgents(aProject());
  const team = await fake.createTeam(channels ? { channels } : {});
  const { result } = await installChatWorkspace(stack.gatewayUrl, {
    token: stack.adminToken,
    tenantId: p.tenantId,
    projectId: p.projectId,
    teamId: team.teamId,
  });
  if (result.searchParams.get('success') !== 'true') throw new Error(`install failed: ${result}`);
  const owner = await tenantClient(p.tenantId, 'admin', 'owner-1');
  return { ...p, team, teamId: team.teamId, owner, ws: `${CHAT}/workspaces/${team.teamId}` };
}
