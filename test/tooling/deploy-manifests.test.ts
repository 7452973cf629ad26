import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { SERVICE_NAMES, services as serviceList } from '@platform/contracts';
import { containerImages, natsVersion } from '../../libs/testkit/src/containers';
import { configSchemas as schemasOf } from '../../scripts/service-definitions';

/**
 * The deployment files, checked offline: scripts/validate-deploy.sh renders every kustomize overlay and validates it
 * against the Kubernetes schemas (and docker-compose.yml against the Compose specification); the tests below read
 * what it rendered and check what a cluster operator relies on.
 */
const root = join(__dirname, '../..');
const services = [...SERVICE_NAMES].sort();
const overlays = readdirSync(join(root, 'deploy/k8s/overlays')).sort();

/** Every environment variable each service parses (its zod configuration). */
const configSchemas = Object.fromEntries(schemasOf());
/** Read outside the zod configurations: the image's service selector and the stream replica count. */
const runtimeVariables = new Set(['SERVICE', 'JS_REPLICAS']);
const secretLooking = /TOKEN|SECRET|PEPPER|PASSWORD|ENCRYPTION_KEY|SIGNING_KEY|HMAC_KEY|^MONGO_URL$|^REDIS_URL$/;

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
};

let validation: { status: number | null; output: string };
const rendered: Record<string, Obj[]> = Object.fromEntries(overlays.map((o) => [o, [] as Obj[]]));

beforeAll(() => {
  const run = spawnSync('bash', [join(root, 'scripts/validate-deploy.sh')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 540_000,
  });
  validation = { status: run.status, output: `${run.stdout}${run.stderr}` };
  for (const overlay of overlays) {
    const file = join(root, '.infra/deploy', `${overlay}.yaml`);
    rendered[overlay] = existsSync(file)
      ? parseAllDocuments(readFileSync(file, 'utf8'))
          .map((d) => d.toJS() as Obj)
          .filter(Boolean)
      : [];
  }
}, 600_000);

const objects = (overlay: string, kind: string) => (rendered[overlay] ?? []).filter((o) => o.kind === kind);
const named = (overlay: string, kind: string, name: string) =>
  objects(overlay, kind).find((o) => o.metadata.name === name);
const container = (d: Obj) => d.spec.template.spec.containers[0];
const envNames = (d: Obj) => (container(d).env ?? []).map((e: { name: string }) => e.name) as string[];

/**
 * A one-off command of the image (`node /app/tools/<name>.js`), as a suspended CronJob: it never runs on its own (an
 * operator starts it: kubectl create job --from=cronjob/<name>), runs as the services do, read-only and non-root, with
 * the shared configuration (and the label the infrastructure policy selects pods by). Its pod and container.
 */
function oneOffCommand(overlay: string, name: string) {
  const job = named(overlay, 'CronJob', name)!;
  expect(job.spec).toMatchObject({ suspend: true, concurrencyPolicy: 'Forbid' });
  const pod = job.spec.jobTemplate.spec.template;
  const c = pod.spec.containers[0];
  expect(c.command).toEqual(['node', `/app/tools/${name}.js`]);
  expect(c.image).toBe(container(named(overlay, 'Deployment', 'management')!).image);
  expect(c.envFrom).toEqual([{ configMapRef: { name: expect.stringMatching(/^platform-config-/) } }]);
  expect(c.securityContext).toEqual({
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
  });
  expect(pod.spec).toMatchObject({
    restartPolicy: 'Never',
    automountServiceAccountToken: false,
    securityContext: { runAsNonRoot: true, runAsUser: 1000 },
  });
  expect(pod.metadata.labels['app.kubernetes.io/part-of']).toBe('agent-platform');
  return { pod, c };
}

describe('deployment files', () => {
  test('when the overlays are rendered, then every object validates against the Kubernetes schemas and docker-compose.yml against the Compose specification', () => {
    if (validation.status !== 0) throw new Error(`scripts/validate-deploy.sh failed:\n${validation.output}`);
    expect(validation.output).toContain('docker-compose.yml validates');
    for (const overlay of overlays) {
      expect(validation.output).toContain(`overlay ${overlay}`);
      expect(rendered[overlay]?.length).toBeGreaterThan(0);
    }
  });

  describe.each(overlays)('overlay %s', (overlay) => {
    test('when it is rendered, then every service has a Deployment, a HorizontalPodAutoscaler and a PodDisruptionBudget of its own', () => {
      expect(
        objects(overlay, 'Deployment')
          .map((d) => d.metadata.name)
          .sort(),
      ).toEqual(services);
      for (const name of services) {
        const hpa = named(overlay, 'HorizontalPodAutoscaler', name);
        expect(hpa?.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name });
        expect(hpa?.spec.minReplicas).toBeGreaterThanOrEqual(1);
        expect(hpa?.spec.maxReplicas).toBeGreaterThan(hpa?.spec.minReplicas);
        expect(named(overlay, 'PodDisruptionBudget', name)?.spec.selector).toEqual({
          matchLabels: { 'app.kubernetes.io/name': name },
        });
        // Replicas belong to the autoscaler: a Deployment that set them would undo its scaling on every apply.
        expect(named(overlay, 'Deployment', name)?.spec.replicas).toBeUndefined();
      }
    });

    test('when it is rendered, then every container has requests and limits, the three probes on its health endpoints and a non-root read-only security context', () => {
      for (const d of objects(overlay, 'Deployment')) {
        const c = container(d);
        const gateway = d.metadata.name === 'gateway';
        expect(c.env).toContainEqual({ name: 'SERVICE', value: d.metadata.name });
        expect(c.resources.requests).toEqual({ cpu: expect.anything(), memory: expect.anything() });
        expect(c.resources.limits).toEqual({ cpu: expect.anything(), memory: expect.anything() });
        const port = gateway ? 'http' : 'health';
        expect(c.startupProbe.httpGet).toEqual({ path: '/healthz', port });
        expect(c.livenessProbe.httpGet).toEqual({ path: gateway ? '/healthz' : '/livez', port });
        expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port });
        expect(c.ports).toContainEqual({ name: 'health', containerPort: 8081 });
        expect(c.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(d.spec.template.spec.securityContext).toMatchObject({
          runAsNonRoot: true,
          runAsUser: 1000,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(d.spec.template.spec.automountServiceAccountToken).toBe(false);
        expect(c.volumeMounts).toContainEqual({ name: 'tmp', mountPath: '/tmp' });
      }
      const gateway = container(named(overlay, 'Deployment', 'gateway')!);
      expect(gateway.ports).toEqual(
        expect.arrayContaining([
          { name: 'http', containerPort: 3000 },
          { name: 'analytics', containerPort: 3001 },
        ]),
      );
    });

    test('when it is rendered, then only the gateway has a Service and an Ingress, for its main and analytics listeners', () => {
      expect(objects(overlay, 'Service').map((s) => s.metadata.name)).toEqual(['gateway']);
      expect(objects(overlay, 'Ingress').map((s) => s.metadata.name)).toEqual(['gateway']);
      const backends = named(overlay, 'Ingress', 'gateway')!.spec.rules.map(
        (r: any) => r.http.paths[0].backend.service,
      );
      expect(backends).toEqual([
        { name: 'gateway', port: { name: 'http' } },
        { name: 'gateway', port: { name: 'analytics' } },
      ]);
      expect(named(overlay, 'Service', 'gateway')!.spec.type).toBe('ClusterIP');
    });

    test('when it is rendered, then no Secret is in it and every secret comes from the Secret platform-secrets', () => {
      expect(objects(overlay, 'Secret')).toEqual([]);
      for (const cm of objects(overlay, 'ConfigMap')) {
        expect(Object.keys(cm.data ?? {}).filter((k) => secretLooking.test(k))).toEqual([]);
      }
      const documented = readFileSync(join(root, 'deploy/k8s/secret.example.yaml'), 'utf8');
      for (const d of objects(overlay, 'Deployment')) {
        for (const e of container(d).env as Array<{ name: string; value?: string; valueFrom?: any }>) {
          // Plain values: the image's service selector and the path of the mounted NATS credential.
          if (e.name === 'SERVICE' || e.name === 'NATS_CREDS') continue;
          expect({ name: e.name, value: e.value }).toEqual({ name: e.name, value: undefined });
          expect(e.valueFrom.secretKeyRef).toMatchObject({ name: 'platform-secrets', key: e.name });
          expect(documented).toMatch(new RegExp(`^\\s*#?\\s*${e.name}:`, 'm'));
        }
      }
    });

    test('when it is rendered, then every Deployment sets NATS_CREDS and mounts its own credentials file and bus key, alone, from the Secret nats-creds', () => {
      for (const d of objects(overlay, 'Deployment')) {
        const name = d.metadata.name;
        const pod = d.spec.template.spec;
        expect({ name, env: container(d).env.find((e: { name: string }) => e.name === 'NATS_CREDS') }).toEqual({
          name,
          env: { name: 'NATS_CREDS', value: `/etc/nats-creds/${name}.creds` },
        });
        const fromCreds = pod.volumes.filter((v: any) => v.secret?.secretName === 'nats-creds');
        expect({ name, fromCreds }).toEqual({
          name,
          fromCreds: [
            {
              name: 'nats-creds',
              secret: {
                secretName: 'nats-creds',
                items: [
                  { key: `${name}.creds`, path: `${name}.creds` },
                  { key: `${name}.key`, path: `${name}.key` },
                ],
                defaultMode: 0o440,
              },
            },
          ],
        });
        expect(container(d).volumeMounts).toContainEqual({
          name: 'nats-creds',
          mountPath: '/etc/nats-creds',
          readOnly: true,
        });
        // Nothing else of the credential set reaches a service: not the server's auth.conf, not the admin identity.
        const secrets = pod.volumes.flatMap((v: any) => (v.secret ? [v.secret.secretName] : []));
        expect({ name, secrets }).toEqual({ name, secrets: ['nats-creds'] });
      }
    });

    test('when it is rendered, then every variable a Deployment sets is one its service reads, and each shared one is read by some service', () => {
      const shared = (name: string) => name.startsWith('platform-config-');
      for (const d of objects(overlay, 'Deployment')) {
        const known = new Set([...Object.keys(configSchemas[d.metadata.name]?.shape ?? {}), ...runtimeVariables]);
        const own = (container(d).envFrom ?? [])
          .map((f: { configMapRef: { name: string } }) => f.configMapRef.name)
          .filter((n: string) => !shared(n))
          .flatMap((n: string) => Object.keys(named(overlay, 'ConfigMap', n)?.data ?? {}));
        const unknown = [...envNames(d), ...own].filter((n) => !known.has(n));
        expect({ service: d.metadata.name, unknown }).toEqual({ service: d.metadata.name, unknown: [] });
        expect(container(d).envFrom[0]).toEqual({ configMapRef: { name: expect.stringMatching(/^platform-config-/) } });
      }
      const readBySome = new Set([
        ...Object.values(configSchemas).flatMap((s) => Object.keys(s.shape)),
        ...runtimeVariables,
      ]);
      const sharedKeys = objects(overlay, 'ConfigMap')
        .filter((c) => shared(c.metadata.name))
        .flatMap((c) => Object.keys(c.data ?? {}));
      expect(sharedKeys.filter((k) => !readBySome.has(k))).toEqual([]);
    });

    test('when it is rendered, then every service that seals secrets gets ENCRYPTION_KEYS, and the re-encryption command is a suspended CronJob of the image that reads only the database and the keys', () => {
      const sealing = Object.entries(configSchemas)
        .filter(([, schema]) => 'ENCRYPTION_KEYS' in schema.shape)
        .map(([name]) => name)
        .sort();
      expect(sealing).toEqual(services.filter((s) => 'sealing' in serviceList[s].uses));
      for (const name of sealing)
        expect({ name, env: envNames(named(overlay, 'Deployment', name)!) }).toEqual({
          name,
          env: expect.arrayContaining(['ENCRYPTION_KEYS', 'ENCRYPTION_KEY']),
        });
      const { pod, c } = oneOffCommand(overlay, 'secrets-reencrypt');
      expect(c.env.map((e: { name: string }) => e.name).sort()).toEqual([
        'ENCRYPTION_KEY',
        'ENCRYPTION_KEYS',
        'MONGO_URL',
      ]);
      for (const e of c.env) expect(e.valueFrom.secretKeyRef).toMatchObject({ name: 'platform-secrets', key: e.name });
      // No NATS credential: it talks to the database only.
      expect((pod.spec.volumes ?? []).filter((v: any) => v.secret)).toEqual([]);
    });

    test('when it is rendered, then the migration command is a suspended CronJob of the image with the database and the webhook-dispatcher credential only', () => {
      const { pod, c } = oneOffCommand(overlay, 'migrate');
      expect(c.env).toEqual([
        { name: 'MONGO_URL', valueFrom: { secretKeyRef: { name: 'platform-secrets', key: 'MONGO_URL' } } },
        // It hands pending deliveries to the job stream: the one identity that may publish those jobs, its key not at all.
        { name: 'NATS_CREDS', value: '/etc/nats-creds/webhook-dispatcher.creds' },
      ]);
      expect(pod.spec.volumes.filter((v: any) => v.secret)).toEqual([
        {
          name: 'nats-creds',
          secret: {
            secretName: 'nats-creds',
            items: [{ key: 'webhook-dispatcher.creds', path: 'webhook-dispatcher.creds' }],
            defaultMode: 0o440,
          },
        },
      ]);
      if (overlay === 'prod')
        expect(c.volumeMounts).toContainEqual({ name: 'nats-ca', mountPath: '/etc/nats-ca', readOnly: true });
    });

    test('when it is rendered, then the network policies deny by default, admit only the ingress controller to the gateway and give internet egress, without private ranges, only to labelled pods', () => {
      const policies = objects(overlay, 'NetworkPolicy');
      const deny = policies.find((p) => p.metadata.name === 'default-deny-all')!;
      expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
      // Ingress rules: from the ingress controller to the gateway's listeners, and from monitoring to :8081 only.
      for (const p of policies.filter((p) => p.spec.ingress)) {
        for (const rule of p.spec.ingress) {
          const from = rule.from.map((f: any) => f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name']);
          const ports = rule.ports.map((x: any) => x.port).sort();
          if (from.includes('ingress-nginx')) {
            expect(p.spec.podSelector).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'gateway' } });
            expect(ports).toEqual([3000, 3001]);
          } else {
            expect(from).toEqual(['monitoring']);
            expect(ports).toEqual([8081]);
          }
        }
      }
      // Egress to the infrastructure namespace: NATS, MongoDB and Redis ports only.
      const infra = policies.find((p) => p.metadata.name === 'allow-infrastructure')!;
      expect(infra.spec.egress[0].ports.map((x: any) => x.port).sort()).toEqual([27017, 4222, 6379]);
      // Internet egress: labelled pods, 80/443, never private, loopback, link-local or shared ranges.
      const internet = policies.find((p) => p.metadata.name === 'internet-egress')!;
      expect(internet.spec.podSelector).toEqual({ matchLabels: { 'agent-platform/egress': 'internet' } });
      const v4 = internet.spec.egress[0].to.find((t: any) => t.ipBlock.cidr === '0.0.0.0/0').ipBlock.except;
      expect(v4).toEqual(
        expect.arrayContaining([
          '10.0.0.0/8',
          '172.16.0.0/12',
          '192.168.0.0/16',
          '169.254.0.0/16',
          '127.0.0.0/8',
          '100.64.0.0/10',
        ]),
      );
      expect(internet.spec.egress[0].ports.map((x: any) => x.port).sort()).toEqual([443, 80]);
      const withInternet = objects(overlay, 'Deployment')
        .filter((d) => d.spec.template.metadata.labels['agent-platform/egress'] === 'internet')
        .map((d) => d.metadata.name)
        .sort();
      expect(withInternet).toEqual(services.filter((s) => 'internetEgress' in serviceList[s]));
      // Every platform pod carries the label the infrastructure and DNS policies select.
      for (const d of objects(overlay, 'Deployment'))
        expect(d.spec.template.metadata.labels['app.kubernetes.io/part-of']).toBe('agent-platform');
    });
  });

  test('when the production overlay is rendered, then streams are replicated on three NATS servers and every service keeps two replicas', () => {
    const config = objects('prod', 'ConfigMap').find((c) => c.metadata.name.startsWith('platform-config-'))!;
    expect(config.data).toMatchObject({ JS_REPLICAS: '3' });
    for (const hpa of objects('prod', 'HorizontalPodAutoscaler'))
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    const nats = parse(readFileSync(join(root, 'deploy/helm-values/nats.yaml'), 'utf8'));
    expect(nats.config.cluster).toEqual({ enabled: true, replicas: 3 });
    expect(nats.config.jetstream).toMatchObject({
      enabled: true,
      fileStore: { enabled: true, pvc: { enabled: true } },
    });
    expect(nats.config.merge.max_payload).toBe(8 * 1024 * 1024);
  });

  test('when the production overlay is rendered, then every service connects to NATS over TLS and verifies the server with the CA mounted from the ConfigMap nats-ca', () => {
    const config = objects('prod', 'ConfigMap').find((c) => c.metadata.name.startsWith('platform-config-'))!;
    expect(config.data).toMatchObject({
      NATS_URL: 'tls://nats.platform-infra.svc.cluster.local:4222',
      NATS_TLS_CA_FILE: '/etc/nats-ca/ca.crt',
    });
    for (const d of objects('prod', 'Deployment')) {
      expect(d.spec.template.spec.volumes).toContainEqual({
        name: 'nats-ca',
        configMap: { name: 'nats-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
      });
      expect(container(d).volumeMounts).toContainEqual({ name: 'nats-ca', mountPath: '/etc/nats-ca', readOnly: true });
    }
    // The server's certificate: cert-manager's kubernetes.io/tls Secret for the name the services connect to.
    const tls = parse(readFileSync(join(root, 'deploy/helm-values/nats-tls.yaml'), 'utf8'));
    expect(tls.config.nats.tls).toMatchObject({
      enabled: true,
      secretName: 'nats-server-tls',
      cert: 'tls.crt',
      key: 'tls.key',
    });
    const issued = parseAllDocuments(readFileSync(join(root, 'deploy/k8s/nats-certificate.example.yaml'), 'utf8')).map(
      (d) => d.toJS(),
    );
    const server = issued.find((o) => o.kind === 'Certificate' && o.spec.secretName === 'nats-server-tls');
    expect(server.spec.dnsNames).toContain(new URL(config.data!.NATS_URL!).hostname);
    expect(server.spec.usages).toContain('server auth');
    const issuer = issued.find((o) => o.kind === 'Issuer' && o.metadata.name === server.spec.issuerRef.name);
    expect(issuer.spec.ca).toBeDefined(); // a CA issuer: the Secret carries the ca.crt the services trust
  });

  test('when the development overlay is rendered, then NATS is plain (authenticated, no TLS)', () => {
    const config = objects('dev', 'ConfigMap').find((c) => c.metadata.name.startsWith('platform-config-'))!;
    expect(config.data!.NATS_URL).toBe('nats://nats.platform-infra.svc.cluster.local:4222');
    expect(config.data!.NATS_TLS_CA_FILE).toBeUndefined();
  });

  test('when the NATS chart values are read, then the servers include the generated auth.conf from the Secret nats-auth, mounted as a directory the config reloader watches', () => {
    const nats = parse(readFileSync(join(root, 'deploy/helm-values/nats.yaml'), 'utf8'));
    expect(nats.config.merge.$include).toBe('../nats-auth/auth.conf');
    expect(nats.podTemplate.patch).toContainEqual({
      op: 'add',
      path: '/spec/volumes/-',
      value: { name: 'nats-auth', secret: { secretName: 'nats-auth' } },
    });
    // Under /etc/ (the reloader mounts what the server mounts there), without subPath (a subPath mount never sees updates).
    const mount = { name: 'nats-auth', mountPath: '/etc/nats-auth', readOnly: true };
    expect(nats.container.patch).toContainEqual({ op: 'add', path: '/volumeMounts/-', value: mount });
    expect(posix.join('/etc/nats-config', nats.config.merge.$include)).toBe(`${mount.mountPath}/auth.conf`);
    expect(nats.natsBox.contexts.default.creds).toEqual({ secretName: 'nats-admin-creds', key: 'admin.creds' });
  });

  test('when the infrastructure values are read, then MongoDB is a three-member replica set whose user reaches every service database and Redis requires a password', () => {
    const mongo = parse(readFileSync(join(root, 'deploy/helm-values/mongodb-replicaset.yaml'), 'utf8'));
    expect(mongo.spec).toMatchObject({ type: 'ReplicaSet', members: 3 });
    const dbs = mongo.spec.users[0].roles.map((r: { db: string }) => r.db).sort();
    const withMongo = Object.entries(configSchemas)
      .filter(([, s]) => 'MONGO_URL' in s.shape)
      .map(([name]) => `platform_${name.replace(/-/g, '_')}`)
      .sort();
    expect(dbs).toEqual(withMongo);
    const redis = parse(readFileSync(join(root, 'deploy/helm-values/redis.yaml'), 'utf8'));
    expect(redis.auth).toMatchObject({ enabled: true, existingSecret: 'platform-redis' });
  });

  test('when docker-compose.yml is read, then it runs every service from one image with a health check and starts the gateway after all of them are healthy', () => {
    const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true });
    const s = compose.services as Record<string, any>;
    expect(s.mongo.image).toMatch(/^mongo:7/);
    expect(s.nats.command).toEqual(expect.arrayContaining(['-js', '-c', '/etc/nats/server.conf']));
    expect(s.nats.volumes).toEqual(
      expect.arrayContaining([
        './deploy/nats/container.conf:/etc/nats/server.conf:ro',
        './deploy/nats.conf:/etc/nats/platform.conf:ro',
        './.local/nats:/etc/nats/auth:ro',
      ]),
    );
    for (const name of ['mongo', 'nats', 'redis']) expect(s[name].healthcheck.test.length).toBeGreaterThan(0);
    for (const name of services) {
      expect({ name, image: s[name].image, SERVICE: s[name].environment.SERVICE }).toEqual({
        name,
        image: 'agent-platform:local',
        SERVICE: name,
      });
      expect(s[name].healthcheck.test).toEqual(['CMD', 'node', '/app/healthcheck.js', '/readyz']);
      expect(s[name].depends_on.nats).toEqual({ condition: 'service_healthy' });
      if (name !== 'gateway') expect(s.gateway.depends_on[name]).toEqual({ condition: 'service_healthy' });
      // Each service waits for the infrastructure it uses.
      const shape = configSchemas[name]?.shape ?? {};
      if ('MONGO_URL' in shape) expect(s[name].depends_on.mongo).toEqual({ condition: 'service_healthy' });
      if ('REDIS_URL' in shape) expect(s[name].depends_on.redis).toEqual({ condition: 'service_healthy' });
    }
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Compose interpolation (host ports movable from .env), not a JS template
    expect(s.gateway.ports).toEqual(['${GATEWAY_HOST_PORT:-3000}:3000', '${ANALYTICS_HOST_PORT:-3001}:3001']);
  });

  test('when docker-compose.yml is read, then NATS runs with the generated authentication and every service mounts its own credentials file and nothing else of the credential set', () => {
    const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true });
    const s = compose.services as Record<string, any>;
    const serverConf = readFileSync(join(root, 'deploy/nats/container.conf'), 'utf8');
    expect(serverConf).toMatch(/^include "platform\.conf"$/m);
    expect(serverConf).toMatch(/^include "auth\/auth\.conf"$/m);
    const identities = Object.keys(
      JSON.parse(readFileSync(join(root, 'deploy/nats/permissions.json'), 'utf8')).identities,
    ).sort();
    expect(identities).toEqual(services);
    for (const name of services) {
      const file = `/run/nats/${name}.creds`;
      expect({ name, NATS_CREDS: s[name].environment.NATS_CREDS, volumes: s[name].volumes }).toEqual({
        name,
        NATS_CREDS: file,
        volumes: [`./.local/nats/${name}.creds:${file}:ro`, `./.local/nats/${name}.key:/run/nats/${name}.key:ro`],
      });
    }
    // The credential directory (keys, auth.conf, admin.creds) goes into the NATS container only.
    const withDir = Object.entries(s)
      .filter(([, svc]) => (svc.volumes ?? []).some((v: string) => v.startsWith('./.local/nats:')))
      .map(([n]) => n);
    expect(withDir).toEqual(['nats']);
  });

  test('when the NATS images are read, then Compose, the local images, the test containers and the chart all run the nats-server of deploy/nats/VERSION', () => {
    const version = natsVersion();
    expect(`v${version}`).toBe(readFileSync(join(root, 'deploy/nats/VERSION'), 'utf8').trim());
    expect(parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }).services.nats.image).toBe(
      `nats:${version}-alpine`,
    );
    // logLevel: the override's `!override` is a Compose tag the yaml library does not know (a warning otherwise)
    expect(
      parse(readFileSync(join(root, 'deploy/compose.local-images.yml'), 'utf8'), { logLevel: 'error' }).services.nats
        .image,
    ).toBe(`localhost/platform-nats:${version}`);
    expect(parse(readFileSync(join(root, 'deploy/helm-values/nats.yaml'), 'utf8')).container.image.tag).toBe(
      `${version}-alpine`,
    );
    const saved = { CONTAINER_IMAGES: process.env.CONTAINER_IMAGES, NATS_IMAGE: process.env.NATS_IMAGE };
    try {
      delete process.env.NATS_IMAGE;
      process.env.CONTAINER_IMAGES = 'official';
      expect(containerImages().nats).toBe(`nats:${version}-alpine`);
      process.env.CONTAINER_IMAGES = 'local';
      expect(containerImages().nats).toBe(`localhost/platform-nats:${version}`);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test('when the Grafana dashboard is read, then it is valid JSON whose panels query every platform metric', () => {
    const dashboard = JSON.parse(readFileSync(join(root, 'deploy/grafana/platform-dashboard.json'), 'utf8'));
    const exprs: string = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr)).join('\n');
    for (const metric of [
      'http_requests_total',
      'http_request_duration_seconds_bucket',
      'nats_request_duration_seconds_bucket',
      'jetstream_consumer_pending',
      'webhook_attempts_total',
      'events_ingested_total',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      expect(exprs).toContain(metric);
    }
    expect(exprs).toMatch(/sum by \(operation\) \(rate\(http_requests_total/);
    expect(exprs).toMatch(/sum by \(outcome\) \(rate\(webhook_attempts_total/);
    expect(exprs).toMatch(/jetstream_consumer_pending\{[^}]*\}\)/);
  });
});
