import {
  createWebhookDestination,
  deleteWebhookDestination,
  disableDestinationForDelivery,
  getWebhookDestination,
  listDestinationsForDispatch as listDestinationsForDispatchCall,
  listWebhookDestinations,
  paged,
  rotateWebhookDestinationSecret,
  updateWebhookDestination,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import {
  addWebhookDestination,
  changeWebhookDestination,
  disableWebhookDestinationForDelivery,
  findWebhookDestination,
  listWebhookDestinationsPage,
  removeWebhookDestination,
  rotateWebhookDestinationSecret as rotateSecret,
  type WebhookDestinationDeps,
  listDestinationsForDispatch,
} from '../domain/webhook-destinations';

export function registerWebhookDestinationHandlers(bus: ServiceBus, deps: WebhookDestinationDeps) {
  bus.handle(listWebhookDestinations, async ({ params, query }) =>
    paged(query, await listWebhookDestinationsPage(deps, params, query)),
  );
  bus.handle(createWebhookDestination, async ({ params, body }) => ({
    data: await addWebhookDestination(deps, params, body),
  }));
  bus.handle(getWebhookDestination, async ({ params }) => ({
    data: await findWebhookDestination(deps, params, params.id),
  }));
  bus.handle(updateWebhookDestination, async ({ params, body }) => ({
    data: await changeWebhookDestination(deps, params, params.id, body),
  }));
  bus.handle(deleteWebhookDestination, async ({ params }) => {
    await removeWebhookDestination(deps, params, params.id);
    return reply(204);
  });
  bus.handle(rotateWebhookDestinationSecret, async ({ params, body }) => ({
    data: await rotateSecret(deps, params, params.id, body?.graceSeconds),
  }));
  /** Internal: every destination of a project, with its sealed secrets, for the webhook dispatcher. */
  bus.serveInternal(listDestinationsForDispatchCall, async (scope) => ({
    destinations: await listDestinationsForDispatch(deps, scope),
  }));
  /** Internal: the dispatcher turns a destination off (410 Gone, failing for days). */
  bus.serveInternal(disableDestinationForDelivery, async (req) => ({
    disabled: await disableWebhookDestinationForDelivery(
      deps,
      { tenantId: req.tenantId, projectId: req.projectId },
      req.id,
      req.reason,
    ),
  }));
}
