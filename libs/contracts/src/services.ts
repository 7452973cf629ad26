/**
 * The platform's processes, listed once. `ServiceName`, the bus's identities and permission table, the health calls,
 * the erasure lists, the test kit's stacks, the configuration table and the build derive from this table;
 * `pnpm services:check` (part of `pnpm check`) checks the files that cannot derive it (Compose, the Kubernetes
 * manifests, the MongoDB user's roles, the operator's credential command) against it. docs/contributing.md, "Adding a
 * service", says what else a new service needs.
 *
 * Order: the order a stack starts them (every service, then the gateway, which waits for them).
 * This file imports nothing: scripts/build-service.mjs compiles it on its own (esbuild) and loads it.
 */

/** What a service erases of a tenant's data: everything of a project it stores, or one conversation's part. */
export type ErasureKind = 'project' | 'conversation';

export interface ServiceFacts {
  /**
   * What it uses besides NATS: `mongo` (a database of its own, `<prefix>_<name>`), `redis`, `sealing` (it seals or
   * opens secrets at rest: it reads ENCRYPTION_KEYS and gets the SecretBox of those keys). libs/runtime opens the connections
   * and adds their settings to the service's configuration; Compose starts it after them; its Kubernetes Deployment
   * reads MONGO_URL / REDIS_URL / ENCRYPTION_KEYS from the Secret; the MongoDB user may use its database.
   */
  readonly uses: { readonly mongo?: true; readonly redis?: true; readonly sealing?: true };
  /** It calls out to the internet (webhook receivers, the chat product, LLM or token endpoints): its pods carry the label `agent-platform/egress: internet`. */
  readonly internetEgress?: true;
  /** Which erasures it takes part in (it stores data of a project, or of a conversation). */
  readonly erases: readonly ErasureKind[];
}

export const services = {
  management: { uses: { mongo: true, redis: true, sealing: true }, erases: ['project', 'conversation'] },
  'run-auth': { uses: { redis: true }, erases: [] },
  'events-ingest': { uses: { mongo: true }, erases: ['project', 'conversation'] },
  analytics: { uses: { mongo: true }, erases: ['project', 'conversation'] },
  evals: { uses: { mongo: true }, internetEgress: true, erases: ['project', 'conversation'] },
  chatapp: { uses: { mongo: true, redis: true, sealing: true }, internetEgress: true, erases: ['project'] },
  'credential-gateway': { uses: { mongo: true, sealing: true }, internetEgress: true, erases: ['project'] },
  'webhook-dispatcher': { uses: { mongo: true, sealing: true }, internetEgress: true, erases: ['project'] },
  // The public HTTP entry (its own process, not libs/runtime): the stored answers of Idempotency-Key requests.
  gateway: { uses: { redis: true }, erases: ['project', 'conversation'] },
} as const satisfies Record<string, ServiceFacts>;

export type ServiceName = keyof typeof services;
/** The services behind the gateway (each boots through libs/runtime and serves a health call). */
export type BackendServiceName = Exclude<ServiceName, 'gateway'>;

/** Every process, in start order (the gateway last). */
export const SERVICE_NAMES = Object.keys(services) as ServiceName[];

/** The services behind the gateway, in the order a stack starts them. */
export const BACKEND_SERVICES = SERVICE_NAMES.filter((s): s is BackendServiceName => s !== 'gateway');

/** The connections a service opens besides NATS. */
export type UsesOf<N extends ServiceName> = (typeof services)[N]['uses'];

/** The facts of one service. */
export function serviceFacts(name: ServiceName): ServiceFacts {
  return services[name];
}

/** The services that take part in one kind of erasure, in start order. */
export type ErasingService<K extends ErasureKind> = {
  [N in ServiceName]: K extends (typeof services)[N]['erases'][number] ? N : never;
}[ServiceName];
export function erasingServices<K extends ErasureKind>(kind: K): ErasingService<K>[] {
  return SERVICE_NAMES.filter((s): s is ErasingService<K> =>
    (services[s].erases as readonly ErasureKind[]).includes(kind),
  );
}

/** `run-auth` → `runAuth`: how a service's names appear in code (its definition's export, its health call). */
export function camelName(name: ServiceName): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}
