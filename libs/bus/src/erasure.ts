import type { NatsConnection } from 'nats';
import {
  ErasureRequest,
  erasureDurable,
  erasureStreamDef,
  reportErasure,
  type ErasureService,
  type ProjectScope,
} from '@platform/contracts';
import { getLogger } from '@platform/logger';
import { consumeDurable, ensureStream, streamSpec, type RunningConsumer } from './jetstream';
import type { ServiceBus } from './rpc';

const log = getLogger('bus.erasure');

export interface ErasureWorkerOptions {
  /** Removes every document of the project this service holds; safe to run twice. */
  eraseProject(scope: ProjectScope): Promise<unknown>;
  /** Removes what this service holds of one conversation (services in CONVERSATION_ERASURE_SERVICES). */
  eraseConversation?(scope: ProjectScope, conversationId: string): Promise<unknown>;
  /** Tells the job's owner this service's part is done; by default the reportErasure call to management. */
  report?(job: ErasureRequest): Promise<void>;
}

/**
 * A service's part of the erasure jobs (docs/operating.md, "Erasure"): its own durable on the ERASURE stream, so a
 * job published while the service is down is worked when it is back. A job is acknowledged only after the erasure and
 * its report succeeded; a failure is redelivered, and erasing again what is gone changes nothing.
 */
export async function startErasureWorker(
  nc: NatsConnection,
  bus: ServiceBus,
  service: ErasureService,
  opts: ErasureWorkerOptions,
): Promise<RunningConsumer> {
  await ensureStream(await nc.jetstreamManager({ timeout: 15_000 }), streamSpec(erasureStreamDef));
  const report =
    opts.report ??
    (async (job: ErasureRequest) => {
      await bus.callInternal(reportErasure, {
        tenantId: job.tenantId,
        projectId: job.projectId,
        erasureId: job.erasureId,
        service,
      });
    });
  return consumeDurable(nc, {
    stream: erasureStreamDef.name,
    durable: erasureDurable(service),
    filterSubjects: [...erasureStreamDef.subjects],
    concurrency: 2,
    nakDelayMs: 1_000,
    ackWaitMs: 120_000,
    terminateInvalid: true,
    parse: ErasureRequest,
    handler: async (job) => {
      if (!job.services.includes(service)) return;
      const scope = { tenantId: job.tenantId, projectId: job.projectId };
      if (job.conversationId === null) await opts.eraseProject(scope);
      else await opts.eraseConversation?.(scope, job.conversationId);
      await report(job);
      log.info(
        {
          erasureId: job.erasureId,
          tenantId: job.tenantId,
          projectId: job.projectId,
          conversation: job.conversationId !== null,
        },
        'erasure part done',
      );
    },
  });
}
