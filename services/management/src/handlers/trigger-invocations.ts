import {
  getTriggerInvocation,
  invokeTrigger,
  listTriggerInvocations,
  paged,
  rerunTriggerInvocation,
} from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import {
  acceptWebhookCall,
  findInvocation,
  listInvocationsPage,
  rerunInvocation,
  type TriggerInvocationDeps,
} from '../domain/trigger-invocations';

export function registerTriggerInvocationHandlers(bus: ServiceBus, deps: TriggerInvocationDeps) {
  bus.handle(invokeTrigger, async ({ params, query, body }, ctx) => {
    const call = {
      headers: ctx.meta.headers ?? {},
      query,
      body,
      rawBody: Buffer.from(ctx.meta.rawBody ?? '', 'base64'),
    };
    const { invocationId, duplicate } = await acceptWebhookCall(deps, params, call);
    return { success: true as const, invocationId, duplicate };
  });
  bus.handle(listTriggerInvocations, async ({ params, query }) =>
    paged(query, await listInvocationsPage(deps, params, query.page, query.limit)),
  );
  bus.handle(getTriggerInvocation, async ({ params }) => ({ data: await findInvocation(deps, params) }));
  bus.handle(rerunTriggerInvocation, async ({ params }) => ({ data: await rerunInvocation(deps, params) }));
}
