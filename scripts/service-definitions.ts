/**
 * Every process's configuration schema, by name, in the order of libs/contracts/src/services.ts: the configuration
 * table (scripts/config-table.ts) and the deployment tests read them from here. The services' definitions are imported
 * one by one (a library may not import a service); the type below holds this table to the list, so a service of the
 * list without its line here, or a line for a name not in it, fails `pnpm typecheck`.
 */
import { SERVICE_NAMES, type BackendServiceName, type ServiceName } from '@platform/contracts';
import { fullConfigSchema, type ServiceDefinition } from '../libs/runtime/src';
import { analytics } from '../services/analytics/src/service';
import { chatapp } from '../services/chatapp/src/service';
import { credentialGateway } from '../services/credential-gateway/src/service';
import { evals } from '../services/evals/src/service';
import { eventsIngest } from '../services/events-ingest/src/service';
import { gatewayConfig } from '../services/gateway/src/config';
import { management } from '../services/management/src/service';
import { runAuth } from '../services/run-auth/src/service';
import { webhookDispatcher } from '../services/webhook-dispatcher/src/service';

export const serviceDefinitions: { [N in BackendServiceName]: ServiceDefinition<any, N> } = {
  management,
  'run-auth': runAuth,
  'events-ingest': eventsIngest,
  analytics,
  evals,
  chatapp,
  'credential-gateway': credentialGateway,
  'webhook-dispatcher': webhookDispatcher,
};

/** The environment each process parses: the gateway's schema, and each service's full one (shared, MongoDB/Redis where used, its own). */
export function configSchemas(): Array<[ServiceName, ReturnType<typeof fullConfigSchema>]> {
  return SERVICE_NAMES.map((name) => [
    name,
    name === 'gateway' ? gatewayConfig : fullConfigSchema(serviceDefinitions[name]),
  ]);
}
