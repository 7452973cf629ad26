import type { Connection } from 'mongoose';

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What marks a document as a project's: its `tenantId` and `projectId` fields, or, for documents that carry no
 * `tenantId` (stores keyed by id alone), an `_id` that starts with `<tenant>:<project>:` (scopedId).
 */
export function projectDocumentFilter(scope: { tenantId: string; projectId: string }): Record<string, unknown> {
  return {
    $or: [
      { tenantId: scope.tenantId, projectId: scope.projectId },
      { tenantId: { $exists: false }, _id: { $regex: `^${escapeRegex(`${scope.tenantId}:${scope.projectId}:`)}` } },
    ],
  };
}

/**
 * Collections no project erasure touches: the audit log (libs/audit) is append-only, and it holds the record of the
 * erasure itself (who erased the project, when, from where); its entries carry no secret (docs/security.md).
 */
const AUDIT_COLLECTIONS: readonly string[] = ['auditLog', 'auditIntents'];

/**
 * Deletes every document of a project from every collection of a service's own database (project erasure,
 * docs/operating.md): collections added later are covered without a list to keep up to date; `keep` names the
 * collections left alone (records of the erasure itself), besides the audit log. Answers how many were removed.
 */
export async function eraseProjectDocuments(
  db: Connection,
  scope: { tenantId: string; projectId: string },
  opts: { keep?: readonly string[] } = {},
): Promise<number> {
  const filter = projectDocumentFilter(scope);
  let removed = 0;
  for (const c of await db.db!.listCollections({}, { nameOnly: true }).toArray()) {
    if (c.name.startsWith('system.') || AUDIT_COLLECTIONS.includes(c.name) || opts.keep?.includes(c.name)) continue;
    const r = await db.db!.collection(c.name).deleteMany(filter);
    removed += r.deletedCount;
  }
  return removed;
}
