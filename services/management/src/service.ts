import { defineService, instanceId } from '@platform/runtime';
import { getLogger } from '@platform/logger';
import { outboxRelay } from '@platform/outbox';
import { keyedHash } from '@platform/secrets';
import { publishNotice, startErasureWorker } from '@platform/bus';
import { appChanged, credentialRevoked, ERASING_PROJECTS_KEY, erasingProjectMember, projectErasing, webhookDestinationsChanged, type CredentialRevoked } from '@platform/contracts';
import { managementConfig } from './config';
import { accessTokenRepo } from './access/access-token.repo';
import { registerAccessHandlers } from './access/access.handlers';
import { registerAuditLog } from './audit/audit-log.handlers';
import { auditLogRepo } from './audit/audit-log.repo';
import { auditEventOf, settleStaleAuditEntries } from './audit/audit-log';
import { sessionStore } from './access/session.store';
import { agentModel } from './agents/agent.model';
import { agentRepo } from './agents/agent.repo';
import { registerAgentHandlers } from './agents/agents.handlers';
import { registerSubAgentAttachmentHandlers } from './agents/sub-agent-attachments.handlers';
import { apiKeyModel } from './api-keys/api-key.model';
import { apiKeyRepo } from './api-keys/api-key.repo';
import { registerApiKeyHandlers } from './api-keys/api-keys.handlers';
import { revokeKeysOfAgent } from './api-keys/api-keys';
import { finishAgentDeletions } from './agents/agents';
import { appEventModel } from './apps/app.model';
import { appRepo } from './apps/app.repo';
import { registerAppHandlers } from './apps/apps.handlers';
import { credentialStoreEntryRepo } from './credentials/credential-store-entry.repo';
import { credentialRepo } from './credentials/credential.repo';
import { registerCredentialHandlers } from './credentials/credentials.handlers';
import { erasureRepo } from './erasures/erasure.repo';
import { recordErasurePart, type ErasureDeps } from './erasures/erasures';
import { registerErasureHandlers } from './erasures/erasures.handlers';
import { feedbackModel } from './feedback/feedback.model';
import { feedbackRepo } from './feedback/feedback.repo';
import { registerFeedbackHandlers } from './feedback/feedback.handlers';
import { entityLock } from './shared/entity-lock.store';
import { skillRepo } from './skills/skill.repo';
import { registerSkillHandlers } from './skills/skills.handlers';
import { registerSystemHandlers } from './system/system.handlers';
import { triggerRepo } from './triggers/trigger.repo';
import { triggerInvocationRepo } from './triggers/trigger-invocation.repo';
import { triggerRateStore } from './triggers/trigger-rate.store';
import { triggerDispatcher } from './triggers/trigger-dispatcher';
import { registerTriggerInvocationHandlers } from './triggers/trigger-invocations.handlers';
import { registerTriggerHandlers } from './triggers/triggers.handlers';
import { webhookDestinationModel } from './webhook-destinations/webhook-destination.model';
import { webhookDestinationRepo } from './webhook-destinations/webhook-destination.repo';
import { registerWebhookDestinationHandlers } from './webhook-destinations/webhook-destinations.handlers';

/**
 * The one place management is put together: each feature folder (api-keys/, apps/, agents/, skills/, credentials/,
 * triggers/, feedback/, webhook-destinations/, access/) holds its handlers, domain and data; here their outbox
 * relays and repositories are built (relay first, from the model) and their handlers registered.
 */
const log = getLogger('management');

export const management = defineService({
  name: 'management',
  config: managementConfig,
  uses: { mongo: true, redis: true, sealing: true },
  async start({ config, bus, pub, db, redis, nc, box }) {
    const relays = {
      apiKeys: outboxRelay(apiKeyModel(db), pub),
      destinations: outboxRelay(webhookDestinationModel(db), pub),
      apps: outboxRelay(appEventModel(db), pub),
      agents: outboxRelay(agentModel(db), pub),
      feedback: outboxRelay(feedbackModel(db), pub),
    };
    const apiKeys = apiKeyRepo(db, relays.apiKeys, redis);
    const destinations = webhookDestinationRepo(db, relays.destinations);
    const apps = appRepo(db, relays.apps);
    const agents = agentRepo(db, relays.agents);
    const feedback = feedbackRepo(db, relays.feedback);
    const skills = skillRepo(db);
    const credentials = credentialRepo(db);
    const entries = credentialStoreEntryRepo(db);
    const triggers = triggerRepo(db);
    const auditDeps = { auditLog: auditLogRepo(db, { publisher: pub, instance: instanceId, eventOf: auditEventOf }) };
    const invocations = triggerInvocationRepo(db);
    const dispatcher = triggerDispatcher(invocations, pub, { sweepMs: config.TRIGGER_DISPATCH_SWEEP_MS });

    await apiKeys.backfillLive();
    // Events a previous process stored but did not publish.
    await apps.sweepHeld();
    const heldSweep = setInterval(() => void apps.sweepHeld().catch(() => undefined), 30_000);
    heldSweep.unref();
    await Promise.all([...Object.values(relays).map((r) => r.sweep()), auditDeps.auditLog.sweep()]);
    // Audit entries of changes whose process stopped before it knew their outcome (see audit/audit-log.handlers.ts).
    const settleAudit = () => settleStaleAuditEntries(auditDeps, config.AUDIT_PENDING_SETTLE_SECONDS * 1000).catch((err: unknown) => (log.warn({ err }, 'settling audit entries failed'), 0));
    await settleAudit();
    // Also the events of stored entries whose writer stopped before publishing them.
    const auditSweep = setInterval(() => void settleAudit().then(() => auditDeps.auditLog.sweep().catch(() => 0)), 60_000);
    auditSweep.unref();
    // Trigger requests a previous process accepted and had not published yet.
    await dispatcher.sweep();

    const announceRevoked = (r: CredentialRevoked) => publishNotice(nc, credentialRevoked, r);
    const keyDeps = { apiKeys, pepper: config.TOKEN_PEPPER, announceRevoked };
    const agentDeps = { agents, skills, lock: entityLock(redis) };
    // Deleting an agent also removes its triggers and revokes the keys bound to it (docs/management.md).
    const deletionDeps = {
      ...agentDeps,
      removeTriggers: async (a: { tenantId: string; projectId: string; agentId: string }) => void (await triggers.removeAllOfAgent(a)),
      revokeKeys: (a: { tenantId: string; projectId: string; agentId: string }) => revokeKeysOfAgent(keyDeps, { tenantId: a.tenantId, projectId: a.projectId }, a.agentId),
    };
    // Deletions a previous process stopped in the middle of.
    await finishAgentDeletions(deletionDeps);
    const deletionSweep = setInterval(() => void finishAgentDeletions(deletionDeps).catch(() => undefined), 30_000);
    deletionSweep.unref();
    // First: the audit log's interceptor wraps every change registered after it.
    registerAuditLog(bus, auditDeps);
    registerSystemHandlers(bus, instanceId);
    registerApiKeyHandlers(bus, keyDeps);
    registerWebhookDestinationHandlers(bus, {
      destinations,
      box,
      allowLoopback: config.ALLOW_LOOPBACK_WEBHOOKS === 'true',
      secretGraceSeconds: config.WEBHOOK_SECRET_GRACE_SECONDS,
      announceChanged: (scope) => publishNotice(nc, webhookDestinationsChanged, { tenantId: scope.tenantId, projectId: scope.projectId }),
    });
    registerAgentHandlers(bus, deletionDeps);
    registerSubAgentAttachmentHandlers(bus, agentDeps);
    registerSkillHandlers(bus, agentDeps);
    registerCredentialHandlers(bus, { credentials, entries, triggers, box });
    registerTriggerHandlers(bus, { triggers, credentials, pepper: config.TOKEN_PEPPER });
    registerTriggerInvocationHandlers(bus, {
      triggers,
      invocations,
      credentials,
      entries,
      box,
      pepper: config.TOKEN_PEPPER,
      rate: triggerRateStore(redis),
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
        // The dispatchers drop their copy of the project's destinations: a delivery job still waiting finds none.
        publishNotice(nc, webhookDestinationsChanged, scope);
      },
      eraseConversation: (scope, conversationId) => feedback.eraseConversation(scope, conversationId),
      report: async (job) => {
        await recordErasurePart(erasureDeps, { tenantId: job.tenantId, projectId: job.projectId }, job.erasureId, 'management');
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
        clearInterval(heldSweep);
        clearInterval(deletionSweep);
        clearInterval(auditSweep);
        await dispatcher.stop();
        await erasureWorker.stop();
        await Promise.all([...Object.values(relays).map((r) => r.stop()), auditDeps.auditLog.flush()]);
      },
    };
  },
});
