import { z } from 'zod';
import { operation } from '../operation';
import { deleteOperation, getOperation, listOperation } from '../record-operations';
import { Principal } from '../principal';
import { dataReply, IdPath, ListQuery, ProjectPath, Rid } from '../common';

/**
 * Analytics keys (an addition): bearer keys for `POST {analytics_url}/events`, issued for one web integration of
 * a project. The key value (`ak_<publicId>.<secret>`) is shown once; only its keyed hash is stored.
 */
export const AnalyticsKey = z.object({
  id: z.string().describe('Equals publicId'),
  name: z.string(),
  integrationId: z.string().describe('The web integration the key is issued for'),
  publicId: z.string(),
  keyPrefix: z.string().describe('First 12 characters of the key, to recognise it'),
  lastUsedAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type AnalyticsKey = z.infer<typeof AnalyticsKey>;

export const AnalyticsKeyCreate = z.strictObject({
  integrationId: Rid.describe('The web integration (for example a site or widget id) whose events the key may send'),
  name: z.string().min(1).max(256),
});
export type AnalyticsKeyCreate = z.infer<typeof AnalyticsKeyCreate>;

const tags = ['Analytics'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/analytics-keys';
/** The problems an operation on one analytics key answers. */
const keyErrors = [400, 401, 403, 404, 500];

export const createAnalyticsKey = operation({
  operationId: 'createAnalyticsKey',
  summary: 'Issue an analytics ingest key for a web integration (the key value is shown once)',
  tags,
  method: 'post',
  path: base,
  service: 'analytics',
  subject: 'svc.analytics.analytics-keys.create',
  auth: 'manage',
  permission: 'use',
  params: ProjectPath,
  body: AnalyticsKeyCreate,
  reply: { status: 201, body: dataReply(z.object({ analyticsKey: AnalyticsKey, key: z.string() })) },
  errors: [400, 401, 403, 422, 500],
  addition: true,
});

export const listAnalyticsKeys = listOperation({
  operationId: 'listAnalyticsKeys',
  summary: 'List the analytics keys of a project',
  tags,
  path: base,
  service: 'analytics',
  subject: 'svc.analytics.analytics-keys.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  query: ListQuery.extend({ integrationId: Rid.optional() }),
  item: AnalyticsKey,
  errors: [400, 401, 403, 500],
  addition: true,
});

export const getAnalyticsKey = getOperation({
  operationId: 'getAnalyticsKey',
  summary: 'Get an analytics key',
  tags,
  path: `${base}/{id}`,
  service: 'analytics',
  subject: 'svc.analytics.analytics-keys.get',
  auth: 'manage',
  permission: 'view',
  params: IdPath,
  item: AnalyticsKey,
  errors: keyErrors,
  addition: true,
});

export const deleteAnalyticsKey = deleteOperation({
  operationId: 'deleteAnalyticsKey',
  summary: 'Revoke an analytics key (it stops working at once)',
  tags,
  path: `${base}/{id}`,
  service: 'analytics',
  subject: 'svc.analytics.analytics-keys.delete',
  auth: 'manage',
  permission: 'use',
  params: IdPath,
  errors: keyErrors,
  addition: true,
});

/** Internal call `verifyAnalyticsKey`: the gateway's analytics listener verifies a presented key. Reply `{principal}` (kind `analytics`) or 401. */
export const VerifyAnalyticsKeyRequest = z.object({ key: z.string() });
export const VerifyAnalyticsKeyReply = z.object({ principal: Principal });
