import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issuedFor, writeCredentialSet, type PermissionTable } from '@platform/nats-auth';

// A checkout's credential set is issued for the permission table of its day; when the table changes (a new call
// declared), the tests' infrastructure must see that the set is stale and issue it again (libs/testkit ensureInfra).
describe('which permission table a credential set was issued for', () => {
  const before: PermissionTable = {
    identities: { gateway: { publish: ['svc.a'], subscribe: [], allowResponses: true } },
  };
  const after: PermissionTable = {
    identities: { gateway: { publish: ['svc.a', 'svc.b'], subscribe: [], allowResponses: true } },
  };

  test('when the set was issued for a table, then it counts as issued for that table and not for a changed one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'issued-for-'));
    await writeCredentialSet(dir, before);
    expect(issuedFor(dir, before)).toBe(true);
    expect(issuedFor(dir, after)).toBe(false);
    await writeCredentialSet(dir, after);
    expect(issuedFor(dir, after)).toBe(true);
  });

  test('when a directory holds no set (or one from a release that did not record its table), then it is not current', () => {
    expect(issuedFor(mkdtempSync(join(tmpdir(), 'issued-for-')), before)).toBe(false);
  });
});
