/**
 * The files that cannot derive the list of services, checked against it (libs/contracts/src/services.ts):
 *   services/<name>/src/main.ts                    a folder per service, and no other service folder
 *   docker-compose.yml                             a Compose service per service (SERVICE, NATS_CREDS, depends_on its
 *                                                  database and Redis, ENCRYPTION_KEYS, as `uses` says; the gateway
 *                                                  after every service)
 *   deploy/k8s/base/<name>.yaml, kustomization     its Deployment, HorizontalPodAutoscaler and PodDisruptionBudget,
 *                                                  listed in the kustomization; MONGO_URL / REDIS_URL /
 *                                                  ENCRYPTION_KEYS as `uses` says
 *   network policies                               the internet-egress label exactly on the services with
 *                                                  `internetEgress`; no policy or overlay patch naming another name
 *   deploy/helm-values/mongodb-replicaset.yaml     the MongoDB user's role on each database of a service with `mongo`
 *   deploy/README.md                               the SERVICES line of the credential Secret command
 * Each problem names the file and what is missing or extra. Part of `pnpm check`:
 *   pnpm services:check
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { services as serviceList, type ServiceFacts } from '@platform/contracts';

const LIST = 'libs/contracts/src/services.ts';
const INFRA = new Set(['mongo', 'nats', 'redis']);
const WORKLOAD_KINDS = new Set(['Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget']);
/** A parsed YAML document, read field by field. */
type Yaml = any;

/** Every problem of the files under `root` against `list` (the committed list unless a test gives another). */
export function serviceListProblems(
  root: string,
  list: Readonly<Record<string, ServiceFacts>> = serviceList,
): string[] {
  const names = Object.keys(list);
  const listed = new Set(names);
  const problems: string[] = [];
  const read = (path: string) => readFileSync(join(root, path), 'utf8');
  /** What a listed service lacks among `found`, and the names in `found` that the list lacks. */
  const compare = (found: Iterable<string>, missing: (name: string) => string, extra: (name: string) => string) => {
    const seen = new Set(found);
    for (const n of names) if (!seen.has(n)) problems.push(missing(n));
    for (const n of seen) if (!listed.has(n)) problems.push(`${extra(n)}, but ${n} is not in ${LIST}`);
  };

  // The code: one folder per service.
  const folders = readdirSync(join(root, 'services')).filter((n) =>
    existsSync(join(root, 'services', n, 'src', 'main.ts')),
  );
  compare(
    folders,
    (n) => `services/${n}/src/main.ts: missing`,
    (n) => `services/${n}/src/main.ts: a service`,
  );

  // Compose: one service of the platform image per listed service.
  const compose: Record<string, Yaml> = parse(read('docker-compose.yml'), { merge: true }).services;
  const platform = Object.entries(compose).filter(([n]) => !INFRA.has(n));
  compare(
    platform.map(([n]) => n),
    (n) => `docker-compose.yml: no service ${n}`,
    (n) => `docker-compose.yml: service ${n}`,
  );
  for (const [name, svc] of platform) {
    const facts = list[name];
    if (!facts) continue;
    if (svc.environment?.SERVICE !== name) problems.push(`docker-compose.yml: ${name} does not set SERVICE: ${name}`);
    if (svc.environment?.NATS_CREDS !== `/run/nats/${name}.creds`)
      problems.push(`docker-compose.yml: ${name} does not set NATS_CREDS: /run/nats/${name}.creds`);
    const after = Object.keys(svc.depends_on ?? {});
    for (const dep of ['mongo', 'redis'] as const) {
      if (Boolean(facts.uses[dep]) !== after.includes(dep))
        problems.push(
          `docker-compose.yml: ${name} ${facts.uses[dep] ? 'does not wait' : 'waits'} for ${dep}, but uses.${dep} in ${LIST} is ${Boolean(facts.uses[dep])}`,
        );
    }
    const keys = 'ENCRYPTION_KEYS' in (svc.environment ?? {});
    if (Boolean(facts.uses.sealing) !== keys)
      problems.push(
        `docker-compose.yml: ${name} ${keys ? 'sets' : 'does not set'} ENCRYPTION_KEYS, but uses.sealing in ${LIST} is ${Boolean(facts.uses.sealing)}`,
      );
  }
  const gatewayAfter = Object.keys(compose.gateway?.depends_on ?? {}).filter((n) => !INFRA.has(n));
  compare(
    [...gatewayAfter, 'gateway'],
    (n) => `docker-compose.yml: the gateway does not wait for ${n} (depends_on)`,
    (n) => `docker-compose.yml: the gateway waits for ${n}`,
  );

  // Kubernetes: per service a file of the base with its workload objects, listed in the kustomization's resources.
  const base = 'deploy/k8s/base';
  const resources: string[] = parse(read(`${base}/kustomization.yaml`)).resources ?? [];
  const objects: Yaml[] = resources
    .filter((r) => existsSync(join(root, base, r)))
    .flatMap((r) => docs(join(root, base, r)).map((o) => ({ ...o, file: `${base}/${r}` })));
  for (const o of objects) {
    if (WORKLOAD_KINDS.has(o.kind) && !listed.has(o.metadata.name))
      problems.push(`${o.file}: ${o.kind} ${o.metadata.name}, but ${o.metadata.name} is not in ${LIST}`);
  }
  for (const name of names) {
    const file = `${base}/${name}.yaml`;
    if (!existsSync(join(root, file))) {
      problems.push(`${file}: missing (the Deployment, HorizontalPodAutoscaler and PodDisruptionBudget of ${name})`);
      continue;
    }
    if (!resources.includes(`${name}.yaml`))
      problems.push(`${base}/kustomization.yaml: ${name}.yaml is not in resources`);
    const own = docs(join(root, file));
    for (const kind of WORKLOAD_KINDS)
      if (!own.some((o) => o.kind === kind && o.metadata.name === name))
        problems.push(`${file}: no ${kind} named ${name}`);
    const deployment = own.find((o) => o.kind === 'Deployment' && o.metadata.name === name);
    if (!deployment) continue;
    const facts = list[name]!;
    const env = new Map<string, Yaml>(
      (deployment.spec.template.spec.containers[0].env ?? []).map((e: Yaml) => [e.name, e]),
    );
    if (env.get('SERVICE')?.value !== name) problems.push(`${file}: the container does not set SERVICE=${name}`);
    if (env.get('NATS_CREDS')?.value !== `/etc/nats-creds/${name}.creds`)
      problems.push(`${file}: the container does not set NATS_CREDS=/etc/nats-creds/${name}.creds`);
    for (const [dep, variable] of [
      ['mongo', 'MONGO_URL'],
      ['redis', 'REDIS_URL'],
      ['sealing', 'ENCRYPTION_KEYS'],
    ] as const) {
      if (Boolean(facts.uses[dep]) !== env.has(variable))
        problems.push(
          `${file}: ${env.has(variable) ? 'sets' : 'does not set'} ${variable}, but uses.${dep} in ${LIST} is ${Boolean(facts.uses[dep])}`,
        );
    }
    const egress = deployment.spec.template.metadata.labels?.['agent-platform/egress'] === 'internet';
    if (egress !== Boolean(facts.internetEgress))
      problems.push(
        `${file}: the pod ${egress ? 'has' : 'lacks'} the label agent-platform/egress: internet, but internetEgress in ${LIST} is ${Boolean(facts.internetEgress)}`,
      );
  }

  // Network policies and overlays: every service name they select or patch is a listed one.
  for (const policy of objects.filter((o) => o.kind === 'NetworkPolicy')) {
    const selected = policy.spec.podSelector?.matchLabels?.['app.kubernetes.io/name'];
    if (selected && !listed.has(selected))
      problems.push(
        `${policy.file}: NetworkPolicy ${policy.metadata.name} selects ${selected}, but ${selected} is not in ${LIST}`,
      );
  }
  const egressPolicy = objects.some(
    (o) => o.kind === 'NetworkPolicy' && o.spec.podSelector?.matchLabels?.['agent-platform/egress'] === 'internet',
  );
  if (!egressPolicy && names.some((n) => list[n]!.internetEgress))
    problems.push(
      `${base}/network-policies.yaml: no NetworkPolicy admits the pods labelled agent-platform/egress: internet`,
    );
  for (const overlay of readdirSync(join(root, 'deploy/k8s/overlays'))) {
    const file = `deploy/k8s/overlays/${overlay}/kustomization.yaml`;
    for (const patch of parse(read(file)).patches ?? []) {
      const target = patch.target ?? {};
      if (WORKLOAD_KINDS.has(target.kind) && target.name && !listed.has(target.name))
        problems.push(`${file}: a patch of ${target.kind} ${target.name}, but ${target.name} is not in ${LIST}`);
    }
  }

  // MongoDB: the platform user may use the database of every service with `mongo`, and no other.
  const roles: Yaml[] = parse(read('deploy/helm-values/mongodb-replicaset.yaml')).spec.users[0].roles;
  const database = (name: string) => `platform_${name.replace(/-/g, '_')}`;
  const byDatabase = new Map(names.map((n) => [database(n), n]));
  const granted = new Set(roles.map((r) => r.db as string));
  for (const n of names)
    if (list[n]!.uses.mongo && !granted.has(database(n)))
      problems.push(`deploy/helm-values/mongodb-replicaset.yaml: no role on ${database(n)} (${n} uses mongo)`);
  for (const db of granted) {
    const owner = byDatabase.get(db);
    if (!owner || !list[owner]!.uses.mongo)
      problems.push(
        `deploy/helm-values/mongodb-replicaset.yaml: a role on ${db}, which no service of ${LIST} with uses.mongo owns`,
      );
  }

  // The operator's command that puts every service's NATS credential into the Secret nats-creds.
  const line = read('deploy/README.md').match(/^SERVICES="([^"]*)"$/m);
  if (!line)
    problems.push(
      'deploy/README.md: no SERVICES="…" line (the services whose credentials go into the Secret nats-creds)',
    );
  else
    compare(
      line[1]!.split(/\s+/).filter(Boolean),
      (n) => `deploy/README.md: ${n} is not in the SERVICES line`,
      (n) => `deploy/README.md: the SERVICES line names ${n}`,
    );

  return problems;
}

function docs(path: string): Yaml[] {
  return parseAllDocuments(readFileSync(path, 'utf8'))
    .map((d) => d.toJS())
    .filter(Boolean);
}

if (require.main === module) {
  const problems = serviceListProblems(join(__dirname, '..'));
  if (problems.length) {
    console.error(
      `The files below do not match the list of services in ${LIST} (docs/contributing.md, "Adding a service"):`,
    );
    for (const p of problems) console.error(`  ${p}`);
    process.exit(1);
  }
  console.log(
    `${LIST}: services/, docker-compose.yml, deploy/k8s, deploy/helm-values and deploy/README.md name the same ${Object.keys(serviceList).length} processes`,
  );
}
