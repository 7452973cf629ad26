import {
  getWebhookDestinationStats,
  listWebhookDeliveries,
  paged,
  recoverWebhookDeliveries,
  redeliverWebhookDelivery,
  testWebhookDestination,
} from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { listDestinationDeliveries, sendTestDelivery, type DeliveryDeps } from '../domain/deliveries';
import { destinationStats, recoverDeliveries, redeliver, type ManualDeliveryDeps } from '../domain/manual-deliveries';

export function registerDeliveryHandlers(bus: ServiceBus, deps: DeliveryDeps) {
  bus.handle(listWebhookDeliveries, async ({ params, query }) =>
    paged(query, await listDestinationDeliveries(deps, params, params.id, query)),
  );
  bus.handle(testWebhookDestination, async ({ params }) => ({ data: await sendTestDelivery(deps, params, params.id) }));
}

/** Redeliver, recover and statistics: what people do with the delivery log. */
export function registerManualDeliveryHandlers(bus: ServiceBus, deps: ManualDeliveryDeps) {
  bus.handle(redeliverWebhookDelivery, async ({ params }) => ({
    data: await redeliver(deps, params, params.id, params.deliveryId),
  }));
  bus.handle(recoverWebhookDeliveries, async ({ params, body }) => ({
    data: await recoverDeliveries(deps, params, params.id, body),
  }));
  bus.handle(getWebhookDestinationStats, async ({ params }) => ({
    data: await destinationStats(deps, params, params.id),
  }));
}
