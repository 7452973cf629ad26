import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AppType, type PlatformCatalog } from '@platform/contracts';

const HostGlob = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[A-Za-z0-9*.-]+(:\d{1,5})?$/, 'must be a host pattern of letters, digits, `-`, `.` and `*`');

/**
 * One catalog entry as configured: the public fields plus who may use the platform.
 * - `appTypes`: app types that may exchange tokens for it (default: every type);
 * - `tenantIds`: tenants that may (default: every tenant).
 */
export const PlatformEntry = z.strictObject({
  slug: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'must be 1-63 of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit'),
  label: z.string().min(1).max(256),
  credentialRequired: z.boolean().default(true),
  pageMatchers: z
    .array(
      z.strictObject({
        hostGlob: HostGlob,
        pageType: z.string().min(1).max(64),
        pathPattern: z.string().min(1).max(1024).startsWith('/'),
      }),
    )
    .max(100)
    .default([]),
  appTypes: z.array(AppType).min(1).optional(),
  tenantIds: z.array(z.string().min(1)).min(1).optional(),
});
export type PlatformEntry = z.infer<typeof PlatformEntry>;

export const CatalogFile = z
  .strictObject({ platforms: z.array(PlatformEntry).max(1000) })
  .refine((c) => new Set(c.platforms.map((p) => p.slug)).size === c.platforms.length, {
    message: 'slugs must be unique',
    path: ['platforms'],
  });

export interface Catalog {
  /** The public catalog (what GET /.well-known/platforms answers). */
  body: PlatformCatalog;
  /** Strong ETag of `body`. */
  etag: string;
  find(slug: string): PlatformEntry | undefined;
}

/** Validates a catalog (from the file or the built-in one); a bad catalog stops the service with a readable message. */
export function buildCatalog(raw: unknown, source: string): Catalog {
  const parsed = CatalogFile.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  - ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(`Invalid platform catalog (${source}):\n${lines.join('\n')}`);
  }
  const entries = parsed.data.platforms;
  const body: PlatformCatalog = {
    platforms: entries.map((p) => ({
      credentialRequired: p.credentialRequired,
      label: p.label,
      slug: p.slug,
      pageMatchers: p.pageMatchers.map((m) => ({
        hostGlob: m.hostGlob,
        pageType: m.pageType,
        pathPattern: m.pathPattern,
      })),
    })),
  };
  const etag = `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 32)}"`;
  const bySlug = new Map(entries.map((p) => [p.slug, p]));
  return { body, etag, find: (slug) => bySlug.get(slug) };
}

/** May an app of this type and tenant get tokens for the platform? */
export function mayUse(platform: PlatformEntry, app: { appType: string; tenantId: string }): boolean {
  if (platform.appTypes && !platform.appTypes.includes(app.appType as AppType)) return false;
  if (platform.tenantIds && !platform.tenantIds.includes(app.tenantId)) return false;
  return true;
}

function globToRegExp(glob: string): RegExp {
  const escaped = glob
    .toLowerCase()
    .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '[a-z0-9.-]*');
  return new RegExp(`^${escaped}$`);
}

/** A `resource` is allowed when it is an absolute http(s) URL without fragment whose host matches one of the platform's host globs. */
export function resourceAllowed(platform: PlatformEntry, resource: string): boolean {
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    return false;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash || url.username || url.password) return false;
  return platform.pageMatchers.some((m) =>
    globToRegExp(m.hostGlob).test(m.hostGlob.includes(':') ? url.host : url.hostname),
  );
}

/** Does an `If-None-Match` header match the ETag (RFC 9110: `*`, a list, weak comparison)? */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((t) => bare(t) === bare(etag));
}
