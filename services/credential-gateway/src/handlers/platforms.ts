import { getPlatformCatalog } from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import { etagMatches, type Catalog } from '../domain/catalog';

export function registerPlatformHandlers(bus: ServiceBus, deps: { catalog: Catalog; maxAgeSeconds: number }) {
  bus.handle(getPlatformCatalog, async (_input, ctx) => {
    const headers = { etag: deps.catalog.etag, 'cache-control': `public, max-age=${deps.maxAgeSeconds}` };
    if (etagMatches(ctx.meta.headers?.['if-none-match'], deps.catalog.etag)) return reply(304, undefined, headers);
    return reply(200, deps.catalog.body, headers);
  });
}
