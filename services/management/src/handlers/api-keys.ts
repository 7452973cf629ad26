import {
  createApiKey,
  deleteApiKey,
  getApiKey,
  listApiKeys,
  paged,
  updateApiKey,
  verifyApiKey as verifyApiKeyCall,
} from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { reply } from '@platform/bus';
import { changeApiKey, findApiKey, issueApiKey, revokeApiKey, verifyApiKey, type ApiKeyDeps } from '../domain/api-keys';

export function registerApiKeyHandlers(bus: ServiceBus, deps: ApiKeyDeps) {
  bus.handle(listApiKeys, async ({ params, query }) =>
    paged(query, await deps.apiKeys.list(params, { agentId: query.agentId }, query.page, query.limit)),
  );
  bus.handle(createApiKey, async ({ params, body }) => ({ data: await issueApiKey(deps, params, body) }));
  bus.handle(getApiKey, async ({ params }) => ({ data: await findApiKey(deps, params, params.id) }));
  bus.handle(updateApiKey, async ({ params, body }) => ({ data: await changeApiKey(deps, params, params.id, body) }));
  bus.handle(deleteApiKey, async ({ params }) => {
    await revokeApiKey(deps, params, params.id);
    return reply(204);
  });
  bus.serveInternal(verifyApiKeyCall, ({ key }) => verifyApiKey(deps, key));
}
