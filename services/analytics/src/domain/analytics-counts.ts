import {
  ANALYTICS_ENTITY_TYPES,
  ANALYTICS_MAX_BUCKETS,
  ANALYTICS_MAX_TYPE_SERIES,
  type AnalyticsCounts,
  type AnalyticsCountsQuery,
  type ProjectScope,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import type { AnalyticsEventRepo } from '../data/analytics-event.repo';
import { BUCKET_MS, floorTo } from './analytics-events';

export interface AnalyticsCountsDeps {
  events: AnalyticsEventRepo;
}

/** Most (type, entityType, bucket) groups one answer may add up; beyond it the caller narrows the range. */
const MAX_GROUP_ROWS = 100_000;
const DEFAULT_RANGE_MS = 24 * 3600_000;

const unprocessable = (detail: string, pointer: string) =>
  new AppError('unprocessable_entity', detail, { errors: [{ pointer, detail }] });

/**
 * Counts per `type` and per `entityType` in UTC buckets. `from` is rounded down and `to` up to whole buckets,
 * so every bucket is complete; every bucket of the range is listed, with zeros where nothing happened.
 */
export async function countAnalyticsEvents(
  deps: AnalyticsCountsDeps,
  scope: ProjectScope,
  query: AnalyticsCountsQuery,
  now = new Date(),
): Promise<AnalyticsCounts> {
  const unit = BUCKET_MS[query.bucket];
  const toRaw = query.to ? new Date(query.to) : now;
  const fromRaw = query.from ? new Date(query.from) : new Date(toRaw.getTime() - DEFAULT_RANGE_MS);
  if (fromRaw >= toRaw) throw unprocessable('from must be earlier than to', '#query/from');
  const from = floorTo(fromRaw, unit);
  const to = new Date(Math.ceil(toRaw.getTime() / unit) * unit);
  const n = (to.getTime() - from.getTime()) / unit;
  if (n > ANALYTICS_MAX_BUCKETS) {
    throw unprocessable(
      `The range spans ${n} ${query.bucket} buckets; at most ${ANALYTICS_MAX_BUCKETS} are allowed (narrow the range or use a larger bucket)`,
      '#query/bucket',
    );
  }

  const rows = await deps.events.countByBucket(scope, { from, to }, query.bucket, MAX_GROUP_ROWS);
  if (rows.length > MAX_GROUP_ROWS) {
    throw unprocessable(
      'Too many distinct types in this range to count at once; narrow the range or use a larger bucket',
      '#query/from',
    );
  }

  const buckets = Array.from({ length: n }, (_, i) => new Date(from.getTime() + i * unit).toISOString());
  const byType = new Map<string, number[]>();
  const byEntityType = new Map<string, number[]>();
  const add = (map: Map<string, number[]>, key: string, i: number, count: number) => {
    let counts = map.get(key);
    if (!counts) map.set(key, (counts = new Array<number>(n).fill(0)));
    counts[i]! += count;
  };
  let total = 0;
  for (const r of rows) {
    const i = Math.floor((r.at.getTime() - from.getTime()) / unit);
    if (i < 0 || i >= n) continue;
    add(byType, r.type, i, r.count);
    add(byEntityType, r.entityType, i, r.count);
    total += r.count;
  }
  const sum = (counts: number[]) => counts.reduce((a, b) => a + b, 0);
  const typeSeries = [...byType.entries()]
    .map(([type, counts]) => ({ type, total: sum(counts), counts }))
    .sort((a, b) => b.total - a.total || (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    bucket: query.bucket,
    buckets,
    total,
    byType: typeSeries.slice(0, ANALYTICS_MAX_TYPE_SERIES),
    byEntityType: ANALYTICS_ENTITY_TYPES.filter((e) => byEntityType.has(e)).map((entityType) => {
      const counts = byEntityType.get(entityType)!;
      return { entityType, total: sum(counts), counts };
    }),
    truncated: typeSeries.length > ANALYTICS_MAX_TYPE_SERIES,
  };
}
