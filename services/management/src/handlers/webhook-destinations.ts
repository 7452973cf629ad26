import {
  createWebhookDestination,
  deleteWebhookDestination,
  getWebhookDestination,
  LIST_DESTINATIONS_FOR_DISPATCH_SUBJECT,
  listWebhookDestinations,
  pagination,
  ProjectPath,
  updateWebhookDestination,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import {
  addWebhookDestination,
  changeWebhookDestination,
  findWebhookDestination,
  listWebhookDestinationsPage,
  removeWebhookDestination,
  type WebhookDestinationDeps,
} from '../domain/webhook-destinations';

export function registerWebhookDestinationHandlers(bus: ServiceBus, deps: WebhookDestinationDeps) {
  bus.handle(listWebhookDestinations, async ({ params, query }) => {
    const { rows, total } = await listWebhookDestinationsPage(deps, params, query);
    return { data: rows, pagination: pagination(query.page, query.limit, total, rows.length) };
  });
  bus.handle(createWebhookDestination, async ({ params, body }) => ({ data: await addWebhookDestination(deps, params, body) }));
  bus.handle(getWebhookDestination, async ({ params }) => ({ data: await findWebhookDestination(deps, params, params.id) }));
  bus.handle(updateWebhookDestination, async ({ params, body }) => ({ data: await changeWebhookDestination(deps, params, params.id, body) }));
  bus.handle(deleteWebhookDestination, async ({ params }) => {
    await removeWebhookDestination(deps, params, params.id);
    return reply(204);
  });
  /** Internal: every destination of a project, with delivery internals, for the webhook dispatcher. */
  bus.serve(LIST_DESTINATIONS_FOR_DISPATCH_SUBJECT, async (wire) => {
    const scope = ProjectPath.parse(wire.params);
    const docs = await deps.destinations.allOfProject(scope);
    return { ok: true, status: 200, body: { destinations: docs.map(({ _id, ...d }) => d) } };
  });
}
