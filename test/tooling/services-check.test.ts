import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_NAMES, services } from '@platform/contracts';
import { serviceListProblems } from '../../scripts/check-services';

/** `pnpm services:check`: the files that cannot derive the list of services, held to libs/contracts/src/services.ts. */
const root = join(__dirname, '../..');
const LIST = 'libs/contracts/src/services.ts';

test('when the committed files are checked against the list, then nothing is missing or extra', () => {
  expect(serviceListProblems(root)).toEqual([]);
});

test('when a service is added to the list only, then the check names each file that lacks it', () => {
  const problems = serviceListProblems(root, {
    ...services,
    'fake-service': { uses: { mongo: true }, internetEgress: true, erases: ['project'] },
  });
  expect(problems).toEqual([
    'services/fake-service/src/main.ts: missing',
    'docker-compose.yml: no service fake-service',
    'docker-compose.yml: the gateway does not wait for fake-service (depends_on)',
    'deploy/k8s/base/fake-service.yaml: missing (the Deployment, HorizontalPodAutoscaler and PodDisruptionBudget of fake-service)',
    'deploy/helm-values/mongodb-replicaset.yaml: no role on platform_fake_service (fake-service uses mongo)',
    'deploy/README.md: fake-service is not in the SERVICES line',
  ]);
});

test('when a service is taken out of the list only, then the check names each file that still runs it', () => {
  const { evals: _, ...withoutEvals } = services;
  expect(serviceListProblems(root, withoutEvals)).toEqual([
    `services/evals/src/main.ts: a service, but evals is not in ${LIST}`,
    `docker-compose.yml: service evals, but evals is not in ${LIST}`,
    `docker-compose.yml: the gateway waits for evals, but evals is not in ${LIST}`,
    `deploy/k8s/base/evals.yaml: Deployment evals, but evals is not in ${LIST}`,
    `deploy/k8s/base/evals.yaml: HorizontalPodAutoscaler evals, but evals is not in ${LIST}`,
    `deploy/k8s/base/evals.yaml: PodDisruptionBudget evals, but evals is not in ${LIST}`,
    `deploy/helm-values/mongodb-replicaset.yaml: a role on platform_evals, which no service of ${LIST} with uses.mongo owns`,
    `deploy/README.md: the SERVICES line names evals, but evals is not in ${LIST}`,
  ]);
});

test("when a service's facts change in the list only, then the check names the Compose, Kubernetes and MongoDB lines that disagree", () => {
  const problems = serviceListProblems(root, {
    ...services,
    evals: { uses: { redis: true, sealing: true }, erases: [] },
  });
  expect(problems).toEqual([
    `docker-compose.yml: evals waits for mongo, but uses.mongo in ${LIST} is false`,
    `docker-compose.yml: evals does not wait for redis, but uses.redis in ${LIST} is true`,
    `docker-compose.yml: evals does not set ENCRYPTION_KEYS, but uses.sealing in ${LIST} is true`,
    `deploy/k8s/base/evals.yaml: sets MONGO_URL, but uses.mongo in ${LIST} is false`,
    `deploy/k8s/base/evals.yaml: does not set REDIS_URL, but uses.redis in ${LIST} is true`,
    `deploy/k8s/base/evals.yaml: does not set ENCRYPTION_KEYS, but uses.sealing in ${LIST} is true`,
    `deploy/k8s/base/evals.yaml: the pod has the label agent-platform/egress: internet, but internetEgress in ${LIST} is false`,
    `deploy/helm-values/mongodb-replicaset.yaml: a role on platform_evals, which no service of ${LIST} with uses.mongo owns`,
  ]);
});

describe('in a copy of the deployment files', () => {
  let copy: string;
  beforeEach(() => {
    copy = mkdtempSync(join(tmpdir(), 'services-check-'));
    cpSync(join(root, 'deploy'), join(copy, 'deploy'), { recursive: true });
    cpSync(join(root, 'docker-compose.yml'), join(copy, 'docker-compose.yml'));
    for (const name of SERVICE_NAMES) {
      mkdirSync(join(copy, 'services', name, 'src'), { recursive: true });
      writeFileSync(join(copy, 'services', name, 'src', 'main.ts'), '');
    }
  });
  afterEach(() => rmSync(copy, { recursive: true, force: true }));
  const edit = (file: string, change: (text: string) => string) =>
    writeFileSync(join(copy, file), change(readFileSync(join(copy, file), 'utf8')));

  test('when a copy is unchanged, then it passes', () => {
    expect(serviceListProblems(copy)).toEqual([]);
  });

  test("when a service's manifest is left out of the kustomization and Compose runs a service the list lacks, then the check names both", () => {
    edit('deploy/k8s/base/kustomization.yaml', (t) => t.replace('  - evals.yaml\n', ''));
    edit('docker-compose.yml', (t) =>
      t.replace(
        '\nvolumes:\n',
        '\n  reporter:\n    image: agent-platform:local\n    environment: { SERVICE: reporter }\n\nvolumes:\n',
      ),
    );
    expect(serviceListProblems(copy)).toEqual([
      `docker-compose.yml: service reporter, but reporter is not in ${LIST}`,
      'deploy/k8s/base/kustomization.yaml: evals.yaml is not in resources',
    ]);
  });

  test('when an overlay patches or a network policy selects a name the list lacks, then the check names it', () => {
    edit('deploy/k8s/overlays/prod/kustomization.yaml', (t) =>
      t.replace('      name: webhook-dispatcher\n', '      name: webhook-dispatch\n'),
    );
    edit('deploy/k8s/base/network-policies.yaml', (t) =>
      t.replace('      app.kubernetes.io/name: gateway\n', '      app.kubernetes.io/name: gateway-v2\n'),
    );
    expect(serviceListProblems(copy)).toEqual([
      `deploy/k8s/base/network-policies.yaml: NetworkPolicy gateway-from-ingress selects gateway-v2, but gateway-v2 is not in ${LIST}`,
      `deploy/k8s/overlays/prod/kustomization.yaml: a patch of HorizontalPodAutoscaler webhook-dispatch, but webhook-dispatch is not in ${LIST}`,
    ]);
  });
});
