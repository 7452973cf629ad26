import { listWebhookDeliveries, pagination, testWebhookDestination } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { listDestinationDeliveries, sendTestDelivery, type DeliveryDeps } from '../domain/deliveries';

export function registerDeliveryHandlers(bus: ServiceBus, deps: DeliveryDeps) {
  bus.handle(listWebhookDeliveries, async ({ params, query }) => {
    const { rows, total } = await listDestinationDeliveries(deps, params, params.id, query);
    return { data: rows, pagination: pagination(query.page, query.limit, total, rows.length) };
  });
  bus.handle(testWebhookDestination, async ({ params }) => ({ data: await sendTestDelivery(deps, params, params.id) }));
}
