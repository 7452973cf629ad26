import {
  CONVERSATION_ERASURE_SERVICES,
  PROJECT_ERASURE_SERVICES,
  erasureSubject,
  type Erasure,
  type ErasureRequest,
  type ErasureService,
  type ProjectScope,
} from '@platform/contracts';
import type { Publisher } from '@platform/bus';
import { AppError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import type { FeedbackRepo } from '../data/feedback.repo';
import type { ErasureRepo } from '../data/erasure.repo';

export interface ErasureDeps {
  erasures: ErasureRepo;
  feedback: FeedbackRepo;
  pub: Publisher;
  /** Marks a project as being erased (writes to it answer 409 at the gateway) or clears the mark. */
  markErasing(scope: ProjectScope, erasing: boolean): Promise<void>;
}

/** Publishes the job for every service (again, when it was already: JetStream drops a repeat within its window). */
async function publishJob(deps: ErasureDeps, scope: ProjectScope, job: Erasure): Promise<void> {
  const request: ErasureRequest = {
    erasureId: job.id,
    ...scope,
    conversationId: job.conversationId,
    services: job.services.map((s) => s.service),
  };
  await deps.pub.publish(
    erasureSubject(scope.tenantId),
    request,
    `erasure-${scope.tenantId}-${scope.projectId}-${job.id}`,
  );
}

async function startErasure(
  deps: ErasureDeps,
  scope: ProjectScope,
  kind: 'conversation' | 'project',
  conversationId: string | null,
  services: readonly ErasureService[],
) {
  const job =
    (await deps.erasures.findPending(scope, kind, conversationId)) ??
    (await deps.erasures.insert(scope, { id: `er_${randomId(16)}`, kind, conversationId, services }));
  if (kind === 'project') await deps.markErasing(scope, true);
  await publishJob(deps, scope, job);
  return job;
}

/** Starts (or answers the pending) erasure of a conversation: run events, analytics events, feedback, evaluation results. */
export async function startConversationErasure(
  deps: ErasureDeps,
  scope: ProjectScope,
  conversationId: string,
): Promise<Erasure> {
  return startErasure(deps, scope, 'conversation', conversationId, CONVERSATION_ERASURE_SERVICES);
}

/** Starts (or answers the pending) erasure of a whole project in every service that holds its data. */
export async function startProjectErasure(deps: ErasureDeps, scope: ProjectScope): Promise<Erasure> {
  return startErasure(deps, scope, 'project', null, PROJECT_ERASURE_SERVICES);
}

export async function findErasure(deps: ErasureDeps, scope: ProjectScope, id: string): Promise<Erasure> {
  const job = await deps.erasures.findById(scope, id);
  if (!job) throw new AppError('not_found', 'Erasure not found');
  return job;
}

/** Records a service's part as done; once every part is, a project is writable again. */
export async function recordErasurePart(
  deps: ErasureDeps,
  scope: ProjectScope,
  id: string,
  service: ErasureService,
): Promise<Erasure> {
  const job = await deps.erasures.markDone(scope, id, service);
  if (!job) throw new AppError('not_found', 'Erasure not found');
  if (job.kind === 'project' && job.status === 'done') await deps.markErasing(scope, false);
  return job;
}
