import { z } from 'zod';
import { operation } from '../operation';
import { AgentPath, Rid } from '../common';

/** Largest webhook body a trigger accepts (bytes); a larger one gets 413. */
export const TRIGGER_BODY_LIMIT_BYTES = 1024 * 1024;

export const TriggerWebhookPath = AgentPath.extend({ id: Rid });

export const TriggerAccepted = z.object({
  success: z.literal(true),
  invocationId: z.string(),
  duplicate: z
    .boolean()
    .describe('True when the delivery id was seen before: nothing new was dispatched, this is the first invocation'),
});

export const invokeTrigger = operation({
  operationId: 'invokeTrigger',
  summary: 'Invoke a trigger (its webhookUrl): checks, transforms and dispatches one execution request per run-as user',
  description:
    "No platform credential: the trigger's own `authentication` headers and `signatureVerification` are checked (a signed timestamp, when one component is marked `timestamp`, must be within `validation.timestampToleranceSeconds` of now, else 401). " +
    'Each trigger has its own rate limit (`rateLimitPerMinute`, 429) and body limit (`bodyLimitBytes`, at most the platform maximum, 413). The body (JSON or form-encoded) ' +
    'is validated against `inputSchema` (422 with pointers), transformed by `outputTransform` and rendered into `messageTemplate`. ' +
    '202 with the invocation id once the invocation is stored; the execution requests follow as `trigger.invoked` events.',
  tags: ['Triggers'],
  method: 'post',
  path: '/run/tenants/{tenantId}/projects/{projectId}/agents/{agentId}/triggers/{id}',
  service: 'management',
  subject: 'svc.management.triggers.invoke',
  auth: 'none',
  params: TriggerWebhookPath,
  query: z
    .record(z.string(), z.union([z.string(), z.array(z.string())]))
    .describe('Passed on as sent (a signature may be a query parameter)'),
  body: z
    .unknown()
    .describe(
      "The provider's payload, JSON or application/x-www-form-urlencoded (its exact bytes are what signatures cover)",
    ),
  bodyType: 'raw',
  bodyLimit: TRIGGER_BODY_LIMIT_BYTES,
  forwardHeaders: ['*'],
  reply: { status: 202, body: TriggerAccepted, description: 'Accepted' },
  errors: [400, 401, 403, 404, 413, 415, 422, 429, 500],
  repeat: 'never',
  addition: true,
});
