import { AppError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import { agentRepo } from '../src/data/agent.repo';
import { apiKeyRepo } from '../src/data/api-key.repo';
import { issueApiKey, type ApiKeyDeps } from '../src/domain/api-keys';
import { repositoryParts } from './repository-parts';

/**
 * A key is written only for a live agent. The check before the write may answer from what the replica saw of the agent
 * in the last minute; the check after it reads the database, so a deletion made on another replica since is seen there.
 * Two repositories over one database stand for two management replicas.
 */
const parts = repositoryParts('agent-liveness');

test('when another replica deleted the agent after this one saw it live, then a key created here is answered 422 at /agentId and is not kept', async () => {
  const here = agentRepo(parts.db, parts.outbox);
  const there = agentRepo(parts.db, parts.outbox);
  const scope = { tenantId: `t-${randomId(8).toLowerCase()}`, projectId: 'p1' };
  const now = new Date();
  await here.insert(
    { ...scope, id: 'a1', name: 'agent', body: '{}', skillIds: [], changeId: null, createdAt: now, updatedAt: now },
    [],
  );
  const revoked: string[] = [];
  const deps: ApiKeyDeps = {
    apiKeys: apiKeyRepo(parts.db, parts.outbox),
    pepper: 'test-pepper',
    announceRevoked: (r) => void revoked.push(r.apiKeyId ?? ''),
    agents: here,
  };
  const first = await issueApiKey(deps, scope, { agentId: 'a1', name: 'first' });
  // The other replica deletes the agent; this one saw it live a moment ago.
  const latest = (await there.findById(scope, 'a1'))!;
  expect(await there.insertTombstone(latest, new Date(), [])).not.toBeNull();

  const refused = await issueApiKey(deps, scope, { agentId: 'a1', name: 'second' }).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(AppError);
  expect((refused as AppError).status).toBe(422);
  expect((refused as AppError).errors?.map((e) => e.pointer)).toEqual(['/agentId']);
  const listed = await deps.apiKeys.list(scope, {}, 1, 10);
  expect(listed.rows.map((k) => k.id)).toEqual([first.apiKey.id]);
  expect(revoked).toHaveLength(1);

  // The refusal was read from the database: the next check before a write reads it again and refuses before writing.
  const again = await issueApiKey(deps, scope, { agentId: 'a1', name: 'third' }).catch((err: unknown) => err);
  expect((again as AppError).status).toBe(422);
  expect(revoked).toHaveLength(1);
});
