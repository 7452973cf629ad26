import { createTrigger, deleteTrigger, getTrigger, listTriggers, paged, updateTrigger } from '@platform/contracts';
import { reply, type HandlerContext, type ServiceBus } from '@platform/bus';
import {
  addTrigger,
  changeTrigger,
  findTrigger,
  listTriggersPage,
  removeTrigger,
  type TriggerContext,
  type TriggerDeps,
} from '../domain/triggers';

const triggerContext = (ctx: HandlerContext): TriggerContext => ({
  principal: ctx.principal,
  baseUrl: ctx.meta.baseUrl,
});
const withWarning = <T>(data: T, warning: string | undefined) => (warning ? { data, warning } : { data });

export function registerTriggerHandlers(bus: ServiceBus, deps: TriggerDeps) {
  bus.handle(listTriggers, async ({ params, query }, ctx) =>
    paged(query, await listTriggersPage(deps, params, query.page, query.limit, triggerContext(ctx))),
  );
  bus.handle(createTrigger, async ({ params, body }, ctx) => {
    const { trigger, warning } = await addTrigger(deps, params, body, triggerContext(ctx));
    return withWarning(trigger, warning);
  });
  bus.handle(getTrigger, async ({ params }, ctx) => ({
    data: await findTrigger(deps, params, params.id, triggerContext(ctx)),
  }));
  bus.handle(updateTrigger, async ({ params, body }, ctx) => {
    const { trigger, warning } = await changeTrigger(deps, params, params.id, body, triggerContext(ctx));
    return withWarning(trigger, warning);
  });
  bus.handle(deleteTrigger, async ({ params }) => {
    await removeTrigger(deps, params, params.id);
    return reply(204);
  });
}
