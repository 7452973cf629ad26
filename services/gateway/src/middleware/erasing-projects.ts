import type { Redis } from 'ioredis';
import { type AnyOperation, erasingProjectKey, refusedDuringErasure, type Principal } from '@platform/contracts';
import { AppError } from '@platform/problems';

export interface ErasingProjects {
  /** 409 when the request writes to a project whose erasure is under way (docs/operating.md, "Erasure"). */
  assertWritable(op: AnyOperation, principal: Principal, params: Record<string, unknown>): Promise<void>;
}

/** The project a request writes to: its path's, or the run or analytics credential's. */
function projectOf(principal: Principal, params: Record<string, unknown>): { tenantId: string; projectId: string } | undefined {
  if (typeof params.tenantId === 'string' && typeof params.projectId === 'string') return { tenantId: params.tenantId, projectId: params.projectId };
  if (principal.kind === 'run' || principal.kind === 'analytics') return { tenantId: principal.tenantId, projectId: principal.projectId };
  return undefined;
}

export function erasingProjects(redis: Redis): ErasingProjects {
  return {
    async assertWritable(op, principal, params) {
      if (!refusedDuringErasure(op)) return;
      const scope = projectOf(principal, params);
      if (!scope) return;
      // Redis away: the check fails open, like the rate limits (the erasure still removes what it finds).
      if ((await redis.exists(erasingProjectKey(scope)).catch(() => 0)) === 1) {
        throw new AppError('conflict', 'This project is being erased; writes are refused until its erasure is done');
      }
    },
  };
}
