import type { Connection, Schema } from 'mongoose';

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

/** Collections no project erasure touches (see keepThroughErasure). */
const kept = new Set<string>();

/**
 * Marks a schema's collection as one no project erasure touches: the audit log (libs/audit: append-only, and it holds
 * the record of the erasure itself, who erased the project, when, from where; its entries carry no secret) and the
 * records of erasures (what was erased, when). Called where the schema is defined, so the mark is there as soon as
 * the module is loaded, whether or not a model of it was made yet.
 */
export function keepThroughErasure(schema: Schema): void {
  const collection = schema.get('collection');
  if (!collection) throw new Error('keepThroughErasure: the schema names no collection');
  kept.add(collection);
}

/**
 * Deletes every document of a project from every collection of a service's own database (project erasure,
 * docs/operating.md): collections added later are covered without a list to keep up to date; the collections marked
 * by keepThroughErasure are left alone. Answers how many were removed.
 */
export async function eraseProjectDocuments(
  db: Connection,
  scope: { tenantId: string; projectId: string },
): Promise<number> {
  const filter = projectDocumentFilter(scope);
  let removed = 0;
  for (const c of await db.db!.listCollections({}, { nameOnly: true }).toArray()) {
    if (c.name.startsWith('system.') || kept.has(c.name)) continue;
    const r = await db.db!.collection(c.name).deleteMany(filter);
    removed += r.deletedCount;
  }
  return removed;
}
