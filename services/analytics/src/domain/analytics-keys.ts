import type { AnalyticsKey, AnalyticsKeyCreate, Principal, ProjectScope } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { keyedHash, randomId, randomSecret, safeEqual } from '@platform/secrets';
import type { AnalyticsKeyRepo } from '../data/analytics-key.repo';

export interface AnalyticsKeyDeps {
  keys: AnalyticsKeyRepo;
  pepper: string;
  /** Tells every gateway to drop its cached verification of a key at once. */
  announceRevoked(r: { analyticsKeyId: string }): void;
}

const KEY_PATTERN = /^ak_([0-9A-Za-z]{12})\.([A-Za-z0-9_-]{43})$/;
const TOUCH_EVERY_MS = 60_000;

/** `ak_<publicId>.<secret>`: publicId is 12 base62 characters (also the key's id), the secret 256 random bits. */
export async function issueAnalyticsKey(
  deps: AnalyticsKeyDeps,
  scope: ProjectScope,
  input: AnalyticsKeyCreate,
): Promise<{ analyticsKey: AnalyticsKey; key: string }> {
  const now = new Date();
  const publicId = randomId(12);
  const key = `ak_${publicId}.${randomSecret(32)}`;
  const analyticsKey = await deps.keys.insert({
    _id: publicId,
    ...scope,
    integrationId: input.integrationId,
    name: input.name,
    keyPrefix: key.slice(0, 12),
    keyHash: keyedHash(deps.pepper, key),
    lastUsedAt: null,
    createdAt: now,
    updatedAt: now,
  });
  return { analyticsKey, key };
}

export async function findAnalyticsKey(deps: AnalyticsKeyDeps, scope: ProjectScope, id: string): Promise<AnalyticsKey> {
  const found = await deps.keys.findById(scope, id);
  if (!found) throw new AppError('not_found', 'Analytics key not found');
  return found;
}

export async function revokeAnalyticsKey(deps: AnalyticsKeyDeps, scope: ProjectScope, id: string): Promise<void> {
  if (!(await deps.keys.remove(scope, id))) throw new AppError('not_found', 'Analytics key not found');
  deps.announceRevoked({ analyticsKeyId: id });
}

const rejected = () =>
  new AppError('unauthorized', 'The analytics key is invalid or revoked', {
    headers: { 'www-authenticate': 'Bearer' },
  });

/** Verifies a presented key (format, keyed hash compared timing-safe) and says who it acts for. */
export async function verifyAnalyticsKey(
  deps: AnalyticsKeyDeps,
  key: string,
): Promise<Extract<Principal, { kind: 'analytics' }>> {
  const m = KEY_PATTERN.exec(key);
  if (!m) throw rejected();
  const doc = await deps.keys.findForVerify(m[1]!);
  if (!doc || !safeEqual(doc.keyHash, keyedHash(deps.pepper, key))) throw rejected();
  const now = new Date();
  if (!doc.lastUsedAt || now.getTime() - doc.lastUsedAt.getTime() > TOUCH_EVERY_MS) {
    void deps.keys.touch(doc._id, now).catch(() => undefined);
  }
  return {
    kind: 'analytics',
    tenantId: doc.tenantId,
    projectId: doc.projectId,
    integrationId: doc.integrationId,
    keyId: doc._id,
  };
}
