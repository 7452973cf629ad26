import type { Redis } from 'ioredis';
import type { NatsConnection, Subscription } from 'nats';
import {
  type AnyOperation,
  ERASING_PROJECTS_KEY,
  erasingProjectMember,
  projectErasing,
  refusedDuringErasure,
  type Principal,
} from '@platform/contracts';
import { subscribeNotice } from '@platform/bus';
import { getLogger } from '@platform/logger';
import { AppError } from '@platform/problems';

const log = getLogger('gateway.erasing-projects');

export interface ErasingProjects {
  /** 409 when the request writes to a project whose erasure is under way (docs/operating.md, "Erasure"). */
  assertWritable(op: AnyOperation, principal: Principal, params: Record<string, unknown>): void;
  /** Whether the project's erasure is under way, as this gateway knows it. */
  has(scope: { tenantId: string; projectId: string }): boolean;
  close(): void;
}

/** The project a request writes to: its path's, or the run or analytics credential's. */
export function projectOf(
  principal: Principal,
  params: Record<string, unknown>,
): { tenantId: string; projectId: string } | undefined {
  if (typeof params.tenantId === 'string' && typeof params.projectId === 'string')
    return { tenantId: params.tenantId, projectId: params.projectId };
  if (principal.kind === 'run' || principal.kind === 'analytics')
    return { tenantId: principal.tenantId, projectId: principal.projectId };
  return undefined;
}

/**
 * The projects being erased, as this gateway knows them: read from Redis (management's set) before the gateway
 * listens and again every `resyncMs`, and changed at once by management's `projectErasing` notice, which arrives
 * before the deletion is answered. So the check costs no round trip per request. A gateway that was cut off from NATS
 * meanwhile could not forward a write anyway, and reads the set again within `resyncMs` of its return. Redis away:
 * the last set read stays (the erasure still removes what it finds). `onNotice` runs on each notice, as it is read.
 */
export async function erasingProjects(
  redis: Redis,
  nc: NatsConnection,
  opts: { resyncMs?: number; onNotice?: () => void } = {},
): Promise<ErasingProjects> {
  const resyncMs = opts.resyncMs ?? 5_000;
  let erasing = new Set<string>();
  /** Notices since the last read began: applied again over what the read found (a read can predate them). */
  let changes: Array<{ member: string; erasing: boolean }> = [];
  const apply = (set: Set<string>, c: { member: string; erasing: boolean }) =>
    c.erasing ? set.add(c.member) : set.delete(c.member);
  const sub: Subscription = subscribeNotice(nc, projectErasing, 'gateway', (n) => {
    const change = { member: erasingProjectMember(n), erasing: n.erasing };
    apply(erasing, change);
    changes.push(change);
    opts.onNotice?.();
  });
  const read = async () => {
    changes = [];
    try {
      const next = new Set(await redis.smembers(ERASING_PROJECTS_KEY));
      for (const c of changes) apply(next, c);
      erasing = next;
    } catch (err) {
      log.warn(
        { err: (err as Error).message },
        'could not read the projects being erased from Redis; keeping the last list',
      );
    }
  };
  await read();
  const timer = setInterval(() => void read(), resyncMs);
  timer.unref();
  return {
    assertWritable(op, principal, params) {
      if (erasing.size === 0 || !refusedDuringErasure(op)) return;
      const scope = projectOf(principal, params);
      if (scope && erasing.has(erasingProjectMember(scope))) {
        throw new AppError('conflict', 'This project is being erased; writes are refused until its erasure is done');
      }
    },
    has(scope) {
      return erasing.has(erasingProjectMember(scope));
    },
    close() {
      clearInterval(timer);
      sub.unsubscribe();
    },
  };
}
