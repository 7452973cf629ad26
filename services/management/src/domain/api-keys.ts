import {
  apiKeyRevoked,
  pendingEvent,
  type ApiKey,
  type ApiKeyCreate,
  type ApiKeyUpdate,
  type ProjectScope,
  type VerifiedApiKey,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { keyedHash, randomId, randomSecret, safeEqual } from '@platform/secrets';
import type { ApiKeyRepo } from '../data/api-key.repo';
import type { AgentLiveness } from './agents';

export interface ApiKeyDeps {
  apiKeys: ApiKeyRepo;
  pepper: string;
  /** Tells every gateway to drop its cached verification of a credential at once. */
  announceRevoked(r: { apiKeyId?: string; accessTokenId?: string }): void;
  /** Whether the key's agent is live, before and after the key is written. */
  agents: AgentLiveness;
}

/** A key is bound to an agent of its project: 422 at `/agentId` when there is none by that id. */
const agentMissing = (agentId: string) => {
  const detail = `no agent "${agentId}" in this project: create the agent before its keys`;
  return new AppError('unprocessable_entity', `The API key names an agent that does not exist (${agentId})`, {
    errors: [{ pointer: '/agentId', detail }],
  });
};

/** Before a key is bound to an agent: the agent is live (or was a moment ago; see `revokeUnlessAgentExists`). */
async function assertAgentExists(deps: ApiKeyDeps, scope: ProjectScope, agentId: string): Promise<void> {
  if (!(await deps.agents.seenLive({ ...scope, agentId }))) throw agentMissing(agentId);
}

const KEY_PATTERN = /^sk_([0-9A-Za-z]{12})\.([A-Za-z0-9_-]{43})$/;
const TOUCH_EVERY_MS = 60_000;

/** `sk_<publicId>.<secret>`: publicId is 12 base62 chars (also the key's id), secret 256 random bits. */
export async function issueApiKey(
  deps: ApiKeyDeps,
  scope: ProjectScope,
  input: ApiKeyCreate,
): Promise<{ apiKey: ApiKey; key: string }> {
  const now = new Date();
  if (input.expiresAt && new Date(input.expiresAt) <= now) {
    throw new AppError('unprocessable_entity', 'expiresAt must be in the future', {
      errors: [{ pointer: '/expiresAt', detail: 'must be in the future' }],
    });
  }
  await assertAgentExists(deps, scope, input.agentId);
  const publicId = randomId(12);
  const key = `sk_${publicId}.${randomSecret(32)}`;
  const apiKey = await deps.apiKeys.insert({
    _id: publicId,
    ...scope,
    agentId: input.agentId,
    name: input.name,
    keyPrefix: key.slice(0, 12),
    keyHash: keyedHash(deps.pepper, key),
    expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
    lastUsedAt: null,
    createdAt: input.createdAt ? new Date(input.createdAt) : now,
    updatedAt: input.updatedAt ? new Date(input.updatedAt) : now,
  });
  await revokeUnlessAgentExists(deps, scope, apiKey.id, input.agentId);
  return { apiKey, key };
}

/**
 * After a key was bound to an agent: when the agent was deleted between the check and the write, its cascade may
 * have missed the key, so the key is revoked here and the request answered 422 (nothing is left bound to no agent).
 */
async function revokeUnlessAgentExists(
  deps: ApiKeyDeps,
  scope: ProjectScope,
  id: string,
  agentId: string,
): Promise<void> {
  if (await deps.agents.isLive({ ...scope, agentId })) return;
  await revokeApiKey(deps, scope, id).catch((err: unknown) => {
    if (!(err instanceof AppError && err.code === 'not_found')) throw err;
  });
  throw agentMissing(agentId);
}

export async function findApiKey(deps: ApiKeyDeps, scope: ProjectScope, id: string): Promise<ApiKey> {
  const found = await deps.apiKeys.findById(scope, id);
  if (!found) throw new AppError('not_found', 'API key not found');
  return found;
}

export async function changeApiKey(
  deps: ApiKeyDeps,
  scope: ProjectScope,
  id: string,
  input: ApiKeyUpdate,
): Promise<ApiKey> {
  const set: Record<string, unknown> = { updatedAt: input.updatedAt ? new Date(input.updatedAt) : new Date() };
  if (input.name !== undefined) set.name = input.name;
  if (input.agentId !== undefined) {
    await findApiKey(deps, scope, id);
    await assertAgentExists(deps, scope, input.agentId);
    set.agentId = input.agentId;
  }
  if (input.expiresAt !== undefined) set.expiresAt = input.expiresAt === null ? null : new Date(input.expiresAt);
  const updated = await deps.apiKeys.update(scope, id, set, [
    pendingEvent(apiKeyRevoked, randomId(24), scope, { id, publicId: id }),
  ]);
  if (!updated) throw new AppError('not_found', 'API key not found');
  deps.announceRevoked({ apiKeyId: id });
  if (input.agentId !== undefined) await revokeUnlessAgentExists(deps, scope, id, input.agentId);
  return updated;
}

export async function revokeApiKey(deps: ApiKeyDeps, scope: ProjectScope, id: string): Promise<void> {
  const removed = await deps.apiKeys.remove(scope, id, [
    pendingEvent(apiKeyRevoked, randomId(24), scope, { id, publicId: id }),
  ]);
  if (!removed) throw new AppError('not_found', 'API key not found');
  deps.announceRevoked({ apiKeyId: id });
}

/** Revokes every key bound to an agent (the agent was deleted); a key revoked meanwhile by someone else is fine. */
export async function revokeKeysOfAgent(deps: ApiKeyDeps, scope: ProjectScope, agentId: string): Promise<void> {
  const ids = await deps.apiKeys.idsOfAgent(scope, agentId);
  await Promise.all(
    ids.map((id) =>
      revokeApiKey(deps, scope, id).catch((err: unknown) => {
        if (!(err instanceof AppError && err.code === 'not_found')) throw err;
      }),
    ),
  );
}

/** Verifies a presented key: format, keyed hash (timing-safe), expiry. Null when it does not verify. */
export async function verifyApiKey(deps: ApiKeyDeps, key: string): Promise<VerifiedApiKey | null> {
  const m = KEY_PATTERN.exec(key);
  if (!m) return null;
  const doc = await deps.apiKeys.findForVerify(m[1]!);
  if (!doc || !safeEqual(doc.keyHash, keyedHash(deps.pepper, key))) return null;
  const now = new Date();
  if (doc.expiresAt && doc.expiresAt <= now) return null;
  if (!doc.lastUsedAt || now.getTime() - doc.lastUsedAt.getTime() > TOUCH_EVERY_MS) {
    void deps.apiKeys.touch(doc, doc._id, now).catch(() => undefined);
  }
  return {
    id: doc._id,
    tenantId: doc.tenantId,
    projectId: doc.projectId,
    agentId: doc.agentId,
    expiresAt: doc.expiresAt ? doc.expiresAt.toISOString() : null,
  };
}
