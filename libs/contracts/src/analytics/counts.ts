import { z } from 'zod';
import { getOperation } from '../record-operations';
import { IsoDateTime, ProjectPath } from '../common';
import { AnalyticsEntityType } from './events';

export const ANALYTICS_BUCKETS = ['minute', 'hour', 'day'] as const;
export const AnalyticsBucket = z.enum(ANALYTICS_BUCKETS);
export type AnalyticsBucket = z.infer<typeof AnalyticsBucket>;

/** Most buckets one request may span (for example 1,440 minutes = one day, 2,000 hours ≈ 83 days). */
export const ANALYTICS_MAX_BUCKETS = 2000;
/** Most distinct `type` series one answer lists (the most frequent first); `truncated` says when more existed. */
export const ANALYTICS_MAX_TYPE_SERIES = 100;

export const AnalyticsCountsQuery = z.object({
  from: IsoDateTime.optional().describe(
    'Start of the range (rounded down to a bucket start); default: `to` minus 24 hours',
  ),
  to: IsoDateTime.optional().describe('End of the range, exclusive (rounded up to a bucket end); default: now'),
  bucket: AnalyticsBucket.default('hour').describe('Bucket size (UTC)'),
});
export type AnalyticsCountsQuery = z.infer<typeof AnalyticsCountsQuery>;

const Series = z.object({
  total: z.number().int(),
  counts: z.array(z.number().int()).describe('One count per bucket, aligned with `buckets`'),
});

export const AnalyticsCounts = z.object({
  from: z.string(),
  to: z.string(),
  bucket: AnalyticsBucket,
  buckets: z.array(z.string()).describe('Start of every bucket in the range, oldest first (ISO 8601, UTC)'),
  total: z.number().int(),
  byType: z.array(Series.extend({ type: z.string() })),
  byEntityType: z.array(Series.extend({ entityType: AnalyticsEntityType })),
  truncated: z
    .boolean()
    .describe(`True when more than ${ANALYTICS_MAX_TYPE_SERIES} types occurred; the rest are left out of byType`),
});
export type AnalyticsCounts = z.infer<typeof AnalyticsCounts>;

export const getAnalyticsCounts = getOperation({
  operationId: 'getAnalyticsCounts',
  summary: 'Counts of ingested analytics events per type and entityType over a time range, in buckets',
  description: `Buckets are UTC-aligned minutes, hours or days by the event's createdAt; a range may span at most ${ANALYTICS_MAX_BUCKETS} buckets (422 beyond).`,
  tags: ['Analytics'],
  path: '/manage/tenants/{tenantId}/projects/{projectId}/analytics/counts',
  service: 'analytics',
  subject: 'svc.analytics.counts.get',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  query: AnalyticsCountsQuery,
  item: AnalyticsCounts,
  errors: [400, 401, 403, 422, 500],
  addition: true,
});
