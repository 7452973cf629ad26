import {
  createCredential,
  createCredentialStoreEntry,
  deleteCredential,
  getCredential,
  listCredentials,
  listCredentialStores,
  paged,
  updateCredential,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import {
  addCredential,
  changeCredential,
  findCredential,
  listCredentialsPage,
  removeCredential,
  type CredentialDeps,
} from '../domain/credentials';
import { credentialStores, putStoreEntry } from '../domain/credential-stores';

export function registerCredentialHandlers(bus: ServiceBus, deps: CredentialDeps) {
  bus.handle(listCredentials, async ({ params, query }) =>
    paged(query, await listCredentialsPage(deps, params, query.page, query.limit)),
  );
  bus.handle(createCredential, async ({ params, body }, ctx) => {
    const { created, credential } = await addCredential(deps, params, body, ctx.principal);
    return reply(created ? 201 : 200, { data: credential });
  });
  bus.handle(getCredential, async ({ params }) => ({ data: await findCredential(deps, params, params.id) }));
  bus.handle(updateCredential, async ({ params, body }) => ({
    data: await changeCredential(deps, params, params.id, body),
  }));
  bus.handle(deleteCredential, async ({ params }) => {
    await removeCredential(deps, params, params.id);
    return reply(204);
  });

  bus.handle(listCredentialStores, async () => ({ data: credentialStores() }));
  bus.handle(createCredentialStoreEntry, async ({ params, body }) => {
    const { tenantId, projectId, id } = params;
    const { created, entry } = await putStoreEntry(deps, { tenantId, projectId }, id, body);
    return reply(created ? 201 : 200, { data: entry });
  });
}
