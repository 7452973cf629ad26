import type { Connection } from '@platform/mongo';
import { outboxRelay, type OutboxRelay } from '@platform/outbox';
import type { Publisher, ServiceBus } from '@platform/bus';
import { SecretBox } from '@platform/secrets';
import type { ManagementConfig } from './config';
import { credentialRepo } from './data/credential.repo';
import { credentialStoreEntryRepo } from './data/credential-store-entry.repo';
import { triggerRepo } from './data/trigger.repo';
import { feedbackModel } from './data/feedback.model';
import { feedbackRepo } from './data/feedback.repo';
import { registerCredentialHandlers } from './handlers/credentials';
import { registerTriggerHandlers } from './handlers/triggers';
import { registerFeedbackHandlers } from './handlers/feedback';

/** Credentials and credential stores, triggers, feedback: their data, outbox relay and handlers. Returns the relays to stop. */
export async function startCredentialsTriggersFeedback(bus: ServiceBus, db: Connection, pub: Publisher, config: ManagementConfig): Promise<OutboxRelay[]> {
  const credentials = credentialRepo(db);
  const entries = credentialStoreEntryRepo(db);
  const triggers = triggerRepo(db);
  const relay = outboxRelay(feedbackModel(db), pub);
  const feedback = feedbackRepo(db, relay);
  await relay.sweep();

  const box = new SecretBox(config.ENCRYPTION_KEY);
  registerCredentialHandlers(bus, { credentials, entries, triggers, box });
  registerTriggerHandlers(bus, { triggers, credentials, pepper: config.TOKEN_PEPPER });
  registerFeedbackHandlers(bus, { feedback });
  return [relay];
}
