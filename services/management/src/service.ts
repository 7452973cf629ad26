import { defineService, instanceId } from '@platform/runtime';
import { keyedHash } from '@platform/secrets';
import { consumeDurable, publishNotice, startErasureWorker } from '@platform/bus';
import {
  appChanged,
  auditCopyDurable,
  auditRecorded,
  credentialRevoked,
  ERASING_PROJECTS_KEY,
  erasingProjectMember,
  eventFilter,
  parseEventData,
  projectErasing,
  webhookDestinationsChanged,
  type CredentialRevoked,
  type EventEnvelope,
} from '@platform/contracts';
import { managementConfig } from './config';
import { accessTokenRepo } from './data/access-token.repo';
import { registerAccessHandlers } from './handlers/access';
import { startAuditLog } from '@platform/audit';
import { registerAuditLogHandlers } from './handlers/audit-log';
import { keepEntryOfAnotherService } from './domain/audit-log';
import { sessionStore } from './data/session.store';
import { agentRepo } from './data/agent.repo';
import { registerAgentHandlers } from './handlers/agents';
import { registerSubAgentAttachmentHandlers } from './handlers/sub-agent-attachments';
import { apiKeyRepo } from './data/api-key.repo';
import { registerApiKeyHandlers } from './handlers/api-keys';
import { revokeKeysOfAgent } from './domain/api-keys';
import { finishAgentDeletions } from './domain/agents';
import { appRepo } from './data/app.repo';
import { registerAppHandlers } from './handlers/apps';
import { credentialStoreEntryRepo } from './data/credential-store-entry.repo';
import { credentialRepo } from './data/credential.repo';
import { registerCredentialHandlers } from './handlers/credentials';
import { erasureRepo } from './data/erasure.repo';
import { recordErasurePart, type ErasureDeps } from './domain/erasures';
import { registerErasureHandlers } from './handlers/erasures';
import { feedbackRepo } from './data/feedback.repo';
import { registerFeedbackHandlers } from './handlers/feedback';
import { entityLock } from './data/entity-lock.store';
import { skillRepo } from './data/skill.repo';
import { registerSkillHandlers } from './handlers/skills';
import { registerSystemHandlers } from './handlers/system';
import { triggerRepo } from './data/trigger.repo';
import { triggerInvocationRepo } from './data/trigger-invocation.repo';
import { triggerRateStore } from './data/trigger-rate.store';
import { triggerDispatcher } from './domain/trigger-dispatcher';
import { registerTriggerInvocationHandlers } from './handlers/trigger-invocations';
import { registerTriggerHandlers } from './handlers/triggers';
import { webhookDestinationRepo } from './data/webhook-destination.repo';
import { registerWebhookDestinationHandlers } from './handlers/webhook-destinations';

/**
 * The one place management is put together: the repositories of data/ (on the service's outbox) are built here, handed
 * to the use cases of domain/, and the handlers of handlers/ registered.
 */
export const management = defineService({
  name: 'management',
  config: managementConfig,
  async start({ config, bus, pub, db, outbox, redis, nc, box }) {
    const apiKeys = apiKeyRepo(db, outbox, redis);
    const rate = triggerRateStore(redis);
    const destinations = webhookDestinationRepo(db, outbox);
    const apps = appRepo(db, outbox);
    const agents = agentRepo(db, outbox);
    const feedback = feedbackRepo(db, outbox);
    const skills = skillRepo(db);
    const credentials = credentialRepo(db);
    const entries = credentialStoreEntryRepo(db);
    const triggers = triggerRepo(db);
    const invocations = triggerInvocationRepo(db);
    const dispatcher = triggerDispatcher(invocations, pub, { sweepMs: config.TRIGGER_DISPATCH_SWEEP_MS });

    // Trigger requests a previous process accepted and had not published yet.
    await dispatcher.sweep();

    const announceRevoked = (r: CredentialRevoked) => publishNotice(nc, credentialRevoked, r);
    // Triggers and API keys belong to a live agent (docs/management.md, "Deleting an agent").
    const keyDeps = { apiKeys, pepper: config.TOKEN_PEPPER, announceRevoked, agents };
    const agentDeps = { agents, skills, lock: entityLock(redis) };
    // Deleting an agent also removes its triggers and revokes the keys bound to it (docs/management.md).
    const deletionDeps = {
      ...agentDeps,
      removeTriggers: async (a: { tenantId: string; projectId: string; agentId: string }) =>
        void (await triggers.removeAllOfAgent(a)),
      revokeKeys: (a: { tenantId: string; projectId: string; agentId: string }) =>
        revokeKeysOfAgent(keyDeps, { tenantId: a.tenantId, projectId: a.projectId }, a.agentId),
    };
    // Deletions a previous process stopped in the middle of.
    await finishAgentDeletions(deletionDeps);
    const deletionSweep = setInterval(() => void finishAgentDeletions(deletionDeps).catch(() => undefined), 30_000);
    deletionSweep.unref();
    // The audit log (libs/audit): its interceptor records every change this bus serves.
    const audit = await startAuditLog({ bus, db, outbox, settleSeconds: config.AUDIT_PENDING_SETTLE_SECONDS });
    registerAuditLogHandlers(bus, audit.deps);
    // The other services' entries join the tenants' log (management's own are skipped: they are stored already).
    const auditCopies = await consumeDurable<EventEnvelope>(nc, {
      stream: auditCopyDurable.stream,
      durable: auditCopyDurable.durable,
      filterSubjects: [eventFilter(auditRecorded)],
      terminateInvalid: true,
      handler: (envelope) => keepEntryOfAnotherService(audit.deps, parseEventData(auditRecorded, envelope.data).entry),
    });
    registerSystemHandlers(bus, instanceId);
    registerApiKeyHandlers(bus, keyDeps);
    registerWebhookDestinationHandlers(bus, {
      destinations,
      box,
      allowLoopback: config.ALLOW_LOOPBACK_WEBHOOKS === 'true',
      secretGraceSeconds: config.WEBHOOK_SECRET_GRACE_SECONDS,
      announceChanged: (scope) =>
        publishNotice(nc, webhookDestinationsChanged, { tenantId: scope.tenantId, projectId: scope.projectId }),
    });
    registerAgentHandlers(bus, deletionDeps);
    registerSubAgentAttachmentHandlers(bus, agentDeps);
    registerSkillHandlers(bus, agentDeps);
    registerCredentialHandlers(bus, { credentials, entries, triggers, box });
    registerTriggerHandlers(bus, { triggers, credentials, pepper: config.TOKEN_PEPPER, agents });
    registerTriggerInvocationHandlers(bus, {
      triggers,
      invocations,
      credentials,
      entries,
      box,
      pepper: config.TOKEN_PEPPER,
      rate,
      dispatcher,
      defaultRatePerMinute: config.TRIGGER_RATE_LIMIT_PER_MINUTE,
    });
    registerFeedbackHandlers(bus, { feedback });
    const erasureDeps: ErasureDeps = {
      erasures: erasureRepo(db),
      feedback,
      pub,
      markErasing: async (scope, erasing) => {
        if (erasing) await redis.sadd(ERASING_PROJECTS_KEY, erasingProjectMember(scope));
        else await redis.srem(ERASING_PROJECTS_KEY, erasingProjectMember(scope));
        publishNotice(nc, projectErasing, { tenantId: scope.tenantId, projectId: scope.projectId, erasing });
      },
    };
    registerErasureHandlers(bus, erasureDeps);
    const erasureWorker = await startErasureWorker(nc, bus, 'management', {
      // Its own part: the conversation's feedback, or every document of the project but the erasure records.
      eraseProject: async (scope) => {
        await erasureDeps.erasures.eraseProjectData(scope);
        // Its Redis state of the project too: the API-key list stamp and the triggers' rate counters.
        await Promise.all([apiKeys.eraseProjectState(scope), rate.eraseProject(scope)]);
        // The dispatchers drop their copy of the project's destinations: a delivery job still waiting finds none.
        publishNotice(nc, webhookDestinationsChanged, scope);
      },
      eraseConversation: (scope, conversationId) => feedback.eraseConversation(scope, conversationId),
      report: async (job) => {
        await recordErasurePart(
          erasureDeps,
          { tenantId: job.tenantId, projectId: job.projectId },
          job.erasureId,
          'management',
        );
      },
    });
    registerAppHandlers(bus, { apps, announceChanged: (change) => publishNotice(nc, appChanged, change) });
    registerAccessHandlers(
      bus,
      {
        accessTokens: accessTokenRepo(db),
        sessions: sessionStore(redis, config.SESSION_TTL_SECONDS),
        adminToken: config.ADMIN_TOKEN,
        pepper: config.TOKEN_PEPPER,
        sessionTtlSeconds: config.SESSION_TTL_SECONDS,
        playgroundKey: config.PLAYGROUND_SIGNING_KEY ?? keyedHash(config.TOKEN_PEPPER, 'playground-signing-key'),
        playgroundTtlSeconds: config.PLAYGROUND_TOKEN_TTL_SECONDS,
        announceRevoked,
      },
      `${config.SESSION_COOKIE_PREFIX}.session_token`,
    );
    return {
      async stop() {
        clearInterval(deletionSweep);
        await auditCopies.stop();
        await dispatcher.stop();
        await erasureWorker.stop();
        await audit.stop();
      },
    };
  },
});
