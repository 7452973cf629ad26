import { z } from 'zod';

/** RID: letters, digits, `-`, `_`, `.`, length 1 to 255. */
export const Rid = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[A-Za-z0-9_.-]+$/, 'must contain only letters, digits, -, _ and .');
export const ProjectId = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'must be lowercase letters, digits and inner hyphens');
/** tenantId is a path string; we hold it to the RID alphabet so it is safe in subjects, keys and URLs. */
export const TenantId = Rid;

export const TenantPath = z.object({ tenantId: TenantId });
export const ProjectPath = z.object({ tenantId: TenantId, projectId: ProjectId });
export const AgentPath = ProjectPath.extend({ agentId: Rid });
export const IdPath = ProjectPath.extend({ id: Rid });

export type TenantPath = z.infer<typeof TenantPath>;
export type ProjectPath = z.infer<typeof ProjectPath>;
export type AgentPath = z.infer<typeof AgentPath>;
export type ProjectScope = ProjectPath;

/** LQ: page >= 1 default 1; limit 1..100 default 10. Query strings arrive as strings. */
export const ListQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(10),
});
export type ListQuery = z.infer<typeof ListQuery>;

export const Pagination = z.object({
  page: z.number().int(),
  limit: z.number().int(),
  total: z.number().int(),
  pages: z.number().int(),
  completedCount: z.number().int(),
});
export type Pagination = z.infer<typeof Pagination>;

export function listReply<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), pagination: Pagination });
}
export function dataReply<T extends z.ZodType>(item: T) {
  return z.object({ data: item });
}

export function pagination(page: number, limit: number, total: number, returned: number): Pagination {
  return {
    page,
    limit,
    total,
    pages: Math.ceil(total / limit),
    completedCount: Math.min(total, (page - 1) * limit + returned),
  };
}

/** The reply of a list operation (`listReply`): one page of `rows`, `total` in all, as `query` asked for it. */
export function paged<T>(query: { page: number; limit: number }, page: { rows: T[]; total: number }) {
  return { data: page.rows, pagination: pagination(query.page, query.limit, page.total, page.rows.length) };
}

/** Header map rule (SPEC "Shared definitions"). */
export const RESERVED_HEADER_NAMES = [
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authorization',
  'proxy-connection',
  'content-length',
];
export const HeaderName = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/, 'must be an RFC 7230 token')
  .refine((n) => !RESERVED_HEADER_NAMES.includes(n.toLowerCase()), { message: 'is a reserved header name' });
export const HeaderValue = z
  .string()
  .min(1)
  .max(1000)
  .regex(/^[^\r\n\0]*$/, 'must not contain CR, LF or NUL');
export const HeaderMap = z.record(HeaderName, HeaderValue);
export type HeaderMap = z.infer<typeof HeaderMap>;

/** ISO 8601 date-time with a timezone offset or Z. */
export const IsoDateTime = z.iso.datetime({ offset: true });

/** A stored time as the wire's ISO 8601 string (strings pass through; null and undefined give undefined). */
export function iso(d: Date | string | undefined | null): string | undefined {
  if (d === undefined || d === null) return undefined;
  return typeof d === 'string' ? d : d.toISOString();
}
export const Timestamp = z.string();

export const JsonObject = z.record(z.string(), z.unknown());

export const SuccessReply = z.object({ success: z.boolean() });
export const MessageRemovedReply = z.object({ message: z.string(), removed: z.boolean() });
export const ExistsReply = z.object({ exists: z.boolean() });
