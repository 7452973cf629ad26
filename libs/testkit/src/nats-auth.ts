import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from 'nats';
import { BusKey, connectNats, readBusKeyFile } from '@platform/bus';
import { ADMIN_IDENTITY, SIGNING_IDENTITY, busKeyPath, credsPath } from '@platform/nats-auth';
import { natsAuthDir, repoRoot } from './infra';

/** The `.creds` file of an identity: a service's name, or `admin` for tools and tests. */
export function natsCredsFile(identity: string = ADMIN_IDENTITY): string {
  const file = credsPath(natsAuthDir(), identity);
  if (!existsSync(file))
    throw new Error(
      `no NATS credentials for "${identity}" in ${natsAuthDir()}: run scripts/infra.sh up (pnpm nats:credentials init)`,
    );
  return file;
}

/**
 * The gateway's bus key (`<set>/gateway.key`): a test that sends public operations on the bus itself, or serves test
 * operations, signs and checks with it as the gateway and the services do.
 */
export function gatewayBusKey(): BusKey {
  return BusKey.gateway(readBusKeyFile(busKeyPath(natsAuthDir(), SIGNING_IDENTITY)));
}

/** The server configuration with authentication (deploy/nats.conf and the generated auth.conf). */
export function natsServerConfig(): string {
  return join(natsAuthDir(), 'server.conf');
}

/** The nats-server binary scripts/infra.sh builds (deploy/nats/VERSION). */
export function natsServerBin(): string {
  const built = join(repoRoot, '.infra', 'bin', 'nats-server');
  return existsSync(built) ? built : 'nats-server';
}

/** The NATS part of a process's environment: where the server is and whose credentials it connects with. */
export function natsEnv(url: string, identity: string): { NATS_URL: string; NATS_CREDS: string } {
  return { NATS_URL: url, NATS_CREDS: natsCredsFile(identity) };
}

/** A connection as `identity` (default: admin, every permission), for tests and tools. */
export function connectAs(
  url: string,
  identity: string = ADMIN_IDENTITY,
  opts: { name?: string; maxReconnectAttempts?: number } = {},
): Promise<NatsConnection> {
  return connectNats({
    url,
    name: opts.name ?? `test-${identity}`,
    credsFile: natsCredsFile(identity),
    maxReconnectAttempts: opts.maxReconnectAttempts,
  });
}
