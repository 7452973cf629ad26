import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StartedTestContainer } from 'testcontainers';
import { natsAuthDir, repoRoot, type InfraEnv } from './infra';

/**
 * Where the test infrastructure comes from, one setting: TEST_INFRA=local (the default: nats-server, redis-server
 * and FerretDB on loopback, started by scripts/infra.sh; the fastest) or TEST_INFRA=containers (one container each,
 * started with testcontainers over the Docker API socket in DOCKER_HOST, removed at the end of the run).
 */
export function useContainerInfra(): boolean {
  const mode = process.env.TEST_INFRA ?? 'local';
  if (mode !== 'local' && mode !== 'containers') throw new Error(`TEST_INFRA must be local or containers, not ${mode}`);
  return mode === 'containers';
}

export interface ContainerImages {
  nats: string;
  redis: string;
  mongo: string;
}

/** The one nats-server version of the project (deploy/nats/VERSION, `v2.15.2`), without its `v`. */
export function natsVersion(): string {
  return readFileSync(join(repoRoot, 'deploy', 'nats', 'VERSION'), 'utf8')
    .trim()
    .replace(/^v/, '');
}

/**
 * CONTAINER_IMAGES=official (the default): the registry's images, so the same tests run on real MongoDB 7.
 * CONTAINER_IMAGES=local: the images scripts/containers/images.sh builds (NATS from the nats-server scripts/infra.sh
 * builds, Redis from Debian, FerretDB on PostgreSQL), for machines that reach no registry. NATS is the version of
 * deploy/nats/VERSION either way. NATS_IMAGE, REDIS_IMAGE, MONGO_IMAGE override each.
 */
export function containerImages(): ContainerImages {
  const local = process.env.CONTAINER_IMAGES === 'local';
  return {
    nats:
      process.env.NATS_IMAGE ?? (local ? `localhost/platform-nats:${natsVersion()}` : `nats:${natsVersion()}-alpine`),
    redis: process.env.REDIS_IMAGE ?? (local ? 'localhost/platform-redis:7.0' : 'redis:7-alpine'),
    mongo: process.env.MONGO_IMAGE ?? (local ? 'localhost/platform-mongo-wire:1.24' : 'mongo:7'),
  };
}

export interface ContainerInfra extends InfraEnv {
  /** Stops and removes every container (nothing reaps them otherwise: Ryuk is off where its image cannot be pulled). */
  stop(): Promise<void>;
}

async function loadTestcontainers(): Promise<typeof import('testcontainers')> {
  if (!process.env.DOCKER_HOST) {
    throw new Error(
      "TEST_INFRA=containers needs a container engine: run `source scripts/containers/engine.sh` first (it starts podman's " +
        'Docker-compatible socket and sets DOCKER_HOST), or set DOCKER_HOST to a Docker socket. See docs/containers.md.',
    );
  }
  return import('testcontainers');
}

/**
 * NATS with JetStream, Redis and a MongoDB-wire server, one container each, on ports published to this host. NATS
 * runs with authentication, as Compose runs it (deploy/nats/container.conf): deploy/nats.conf and the auth.conf of
 * this checkout's credential set (`scripts/infra.sh credentials` makes it when missing), so the tests connect with
 * the same `.creds` files as against the local server.
 */
export async function startContainerInfra(images: ContainerImages = containerImages()): Promise<ContainerInfra> {
  const { GenericContainer, Wait } = await loadTestcontainers();
  execFileSync('bash', [join(repoRoot, 'scripts', 'infra.sh'), 'credentials'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, NATS_AUTH_DIR: natsAuthDir() },
  });
  const nats = new GenericContainer(images.nats)
    .withCopyFilesToContainer([
      { source: join(repoRoot, 'deploy', 'nats', 'container.conf'), target: '/etc/nats/server.conf' },
      { source: join(repoRoot, 'deploy', 'nats.conf'), target: '/etc/nats/platform.conf' },
      { source: join(natsAuthDir(), 'auth.conf'), target: '/etc/nats/auth/auth.conf' },
    ])
    .withCommand(['-c', '/etc/nats/server.conf', '-js', '-sd', '/data'])
    .withExposedPorts(4222)
    .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
    .start();
  const redis = new GenericContainer(images.redis)
    .withExposedPorts(6379)
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .start();
  const mongo = new GenericContainer(images.mongo)
    .withExposedPorts(27017)
    .withWaitStrategy(Wait.forListeningPorts())
    .start();
  const started = await Promise.allSettled([nats, redis, mongo]);
  const containers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async () => {
    await Promise.allSettled(containers.map((c) => c.stop({ remove: true, removeVolumes: true })));
  };
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await stop();
    throw new Error(
      `starting the test containers failed (images ${Object.values(images).join(', ')}): ${failed.reason}`,
    );
  }
  const [n, r, m] = containers as [StartedTestContainer, StartedTestContainer, StartedTestContainer];
  return {
    NATS_URL: `nats://${n.getHost()}:${n.getMappedPort(4222)}`,
    REDIS_URL: `redis://${r.getHost()}:${r.getMappedPort(6379)}`,
    MONGO_URL: `mongodb://${m.getHost()}:${m.getMappedPort(27017)}/`,
    stop,
  };
}
