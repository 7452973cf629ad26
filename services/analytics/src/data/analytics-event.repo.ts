import type { AnalyticsBucket, AnalyticsEvent, ProjectScope } from '@platform/contracts';
import { iso, isDuplicateKey, scoped, scopedId, type Connection } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
import { analyticsEventModel, type AnalyticsEntityTypeName, type AnalyticsEventDoc } from './analytics-event.model';

// A row always has both (default null); the schema's type also admits a row written without them.
const parse = (json: string | null | undefined): Record<string, unknown> | null =>
  json == null ? null : (JSON.parse(json) as Record<string, unknown>);

export function toAnalyticsEvent(d: AnalyticsEventDoc): AnalyticsEvent {
  const common = {
    id: d.id,
    type: d.type,
    createdAt: iso(d.createdAt)!,
    projectId: d.projectId,
    integrationId: d.integrationId ?? null,
    properties: parse(d.propertiesJson),
    userProperties: parse(d.userPropertiesJson),
  };
  switch (d.entityType) {
    case 'message':
      return { entityType: 'message', messageId: d.messageId!, ...common };
    case 'conversation':
      return { entityType: 'conversation', conversationId: d.conversationId!, ...common };
    case 'search':
      return { entityType: 'search', searchQuery: d.searchQuery!, ...common };
  }
}

/** One row of a counts query: how many events of a type and entityType fell in one bucket. */
export interface BucketCount {
  type: string;
  entityType: AnalyticsEntityTypeName;
  at: Date;
  count: number;
}

const BUCKET_FIELD: Record<AnalyticsBucket, keyof AnalyticsEventDoc> = {
  minute: 'bucketMinute',
  hour: 'bucketHour',
  day: 'bucketDay',
};

export type AnalyticsEventRepo = ReturnType<typeof analyticsEventRepo>;

export function analyticsEventRepo(db: Connection, outbox: Outbox) {
  const Model = analyticsEventModel(db);
  // Events arriving together (concurrent requests, on any connection) are stored with one unordered insertMany (the
  // outbox's group commit; they emit no events).
  const group = outbox.of(Model);
  // Ids this process stored lately (oldest first): a replay of one is answered without entering a batch, since a
  // duplicate inside a multi-row insert makes FerretDB redo the whole batch row by row.
  const stored = new Set<string>();
  const remember = (id: string) => {
    stored.add(id);
    if (stored.size > 10_000) stored.delete(stored.values().next().value as string);
  };
  const insertAlone = async (full: AnalyticsEventDoc) => {
    try {
      await Model.collection.insertOne(full as never);
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  };
  const insertGrouped = async (full: AnalyticsEventDoc) => {
    if (stored.has(full._id)) return false;
    const created = (await group.insert(full)) === 'inserted';
    remember(full._id);
    return created;
  };
  return {
    model: Model,
    /** Inserts once; when the id exists for the project, returns the stored row untouched (`created: false`). */
    async insertOnce(doc: Omit<AnalyticsEventDoc, '_id'>): Promise<{ created: boolean; event: AnalyticsEvent }> {
      const full: AnalyticsEventDoc = { _id: scopedId(doc, doc.id), ...doc };
      for (let attempt = 0; ; attempt++) {
        const created = attempt === 0 ? await insertGrouped(full) : await insertAlone(full);
        if (created) return { created: true, event: toAnalyticsEvent(full) };
        const existing = await Model.findById(full._id).lean();
        if (existing) return { created: false, event: toAnalyticsEvent(existing) };
        // Known as stored but gone since (removed): store it again, on its own.
        if (attempt > 0) throw new Error('analytics event neither stored nor readable');
      }
    },
    /**
     * Counts per (type, entityType, bucket) of events with `from <= createdAt < to`: an indexed range scan
     * grouped in the database on the precomputed bucket field. At most `maxRows` rows (+1 to detect more).
     */
    async countByBucket(
      scope: ProjectScope,
      range: { from: Date; to: Date },
      bucket: AnalyticsBucket,
      maxRows: number,
    ): Promise<BucketCount[]> {
      const rows = await Model.aggregate<{
        _id: { type: string; entityType: AnalyticsEntityTypeName; at: Date };
        count: number;
      }>([
        { $match: { ...scoped(scope), createdAt: { $gte: range.from, $lt: range.to } } },
        {
          $group: {
            _id: { type: '$type', entityType: '$entityType', at: `$${BUCKET_FIELD[bucket]}` },
            count: { $sum: 1 },
          },
        },
        { $limit: maxRows + 1 },
      ]);
      return rows.map((r) => ({
        type: r._id.type,
        entityType: r._id.entityType,
        at: new Date(r._id.at),
        count: r.count,
      }));
    },
  };
}
