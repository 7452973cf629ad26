import { randomId } from '@platform/secrets';
import { eventually } from '@platform/testkit';
import { agentRepo } from '../src/data/agent.repo';
import { repositoryParts } from './repository-parts';

/**
 * Agents are stored as insert-only revisions (`<agent>#<n>` is the key, so two writers of revision n+1 cannot both
 * win) and superseded revisions are pruned. A writer that read revision n while others wrote n+1 and n+2 and pruned
 * n+1 must still fail on key n+1: had the prune freed the key, its change would be stored behind n+2 while the caller
 * is told it was stored (seen as an attachment missing after 8 concurrent attaches all answered 201).
 */
const parts = repositoryParts('agent-revisions');

test('when a writer read a revision whose successor was written and pruned since, then its write is refused (null) and the latest revision keeps every change', async () => {
  const repo = agentRepo(parts.db, parts.outbox);
  const scope = { tenantId: `t-${randomId(8).toLowerCase()}`, projectId: 'p1' };
  const now = new Date();
  await repo.insert(
    { ...scope, id: 'a1', name: 'agent', body: 'v1', skillIds: [], changeId: null, createdAt: now, updatedAt: now },
    [],
  );
  const first = (await repo.findById(scope, 'a1'))!;
  const second = (await repo.replaceBody(first, { body: 'v2', skillIds: [], updatedAt: now }, []))!;
  expect(second.revision).toBe(2);
  const third = (await repo.replaceBody(second, { body: 'v3', skillIds: [], updatedAt: now }, []))!;
  expect(third.revision).toBe(3);
  // the third write prunes revision 2: emptied, its key kept
  await eventually(
    async () => (await repo.model.findOne({ ...scope, id: 'a1', revision: 2 }).lean())?.body === '',
    'revision 2 to be pruned',
  );

  // A writer that read revision 1 before all this now writes "revision 2".
  expect(await repo.replaceBody(first, { body: 'stale', skillIds: [], updatedAt: now }, [])).toBeNull();
  expect((await repo.findById(scope, 'a1'))?.body).toBe('v3');
  expect((await repo.model.findOne({ ...scope, id: 'a1', revision: 2 }).lean())?.body).toBe('');
});
