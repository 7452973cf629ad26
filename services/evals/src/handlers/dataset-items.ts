import {
  createDatasetItem,
  createDatasetItemsBulk,
  deleteDatasetItem,
  getDatasetItem,
  listDatasetItems,
  paged,
  pagination,
  updateDatasetItem,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import {
  addDatasetItem,
  addDatasetItemsBulk,
  changeDatasetItem,
  findDatasetItem,
  removeDatasetItem,
  type DatasetItemDeps,
} from '../domain/dataset-items';

export function registerDatasetItemHandlers(bus: ServiceBus, deps: DatasetItemDeps) {
  bus.handle(listDatasetItems, async ({ params, query }) =>
    paged(query, await deps.items.list(params, params.datasetId, query.page, query.limit)),
  );
  bus.handle(createDatasetItem, async ({ params, body }) => ({ data: await addDatasetItem(deps, params, body) }));
  bus.handle(createDatasetItemsBulk, async ({ params, body }) => {
    const { data, errors } = await addDatasetItemsBulk(deps, params, body);
    return { data, pagination: pagination(1, Math.max(1, data.length), data.length, data.length), errors };
  });
  bus.handle(getDatasetItem, async ({ params }) => ({ data: await findDatasetItem(deps, params, params.itemId) }));
  bus.handle(updateDatasetItem, async ({ params, body }) => ({
    data: await changeDatasetItem(deps, params, params.itemId, body),
  }));
  bus.handle(deleteDatasetItem, async ({ params }) => {
    await removeDatasetItem(deps, params, params.itemId);
    return reply(204);
  });
}
