import type { AnyOperation } from './operation';
import * as apiKeys from './manage/api-keys';
import * as auth from './manage/auth';
import * as auditLog from './manage/audit-log';
import * as webhookDestinations from './manage/webhook-destinations';
import * as credentials from './manage/credentials';
import * as triggers from './manage/triggers';
import * as triggerInvocations from './manage/trigger-invocations';
import * as triggerWebhooks from './run/triggers';
import * as feedback from './manage/feedback';
import * as erasures from './manage/erasures';
import * as apps from './manage/apps';
import * as runAuth from './run/auth';
import * as webhookDeliveries from './manage/webhook-deliveries';
import * as runEvents from './run/events';
import * as system from './internal/system';
import * as agents from './manage/agents';
import * as subAgentAttachments from './manage/sub-agent-attachments';
import * as skills from './manage/skills';
import * as analyticsEvents from './analytics/events';
import * as analyticsKeys from './analytics/keys';
import * as analyticsCounts from './analytics/counts';
import * as chatapp from './work-apps/chatapp';
import * as credentialGateway from './credential-gateway/token-exchange';
import * as datasetItems from './evals/dataset-items';
import * as evaluators from './evals/evaluators';
import * as evaluations from './evals/evaluations';
import * as improvements from './evals/improvements';

/** Every module that declares operations; each exported OperationDef in them is mounted and documented. */
const modules: Array<Record<string, unknown>> = [
  system,
  auth,
  apiKeys,
  webhookDestinations,
  webhookDeliveries,
  runEvents,
  apps,
  runAuth,
];
modules.push(agents, subAgentAttachments, skills);
modules.push(credentials, triggers, triggerInvocations, triggerWebhooks, feedback, auditLog, erasures);
modules.push(analyticsEvents, analyticsKeys, analyticsCounts);
modules.push(chatapp);
modules.push(credentialGateway);
modules.push(datasetItems, evaluators, evaluations, improvements);

function isOperation(v: unknown): v is AnyOperation {
  return typeof v === 'object' && v !== null && 'operationId' in v && 'subject' in v && 'method' in v && 'path' in v;
}

export const allOperations: AnyOperation[] = modules.flatMap((m) => Object.values(m).filter(isOperation));

const seen = new Set<string>();
for (const op of allOperations) {
  const key = `${op.method} ${op.path}`;
  if (seen.has(key) || seen.has(op.operationId)) throw new Error(`duplicate operation ${key} / ${op.operationId}`);
  seen.add(key);
  seen.add(op.operationId);
}
