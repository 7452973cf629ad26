/**
 * The README's quick start against docker-compose.yml in containers, then a graceful drain. Run by
 * scripts/test-containers.sh (which makes the engine and the images ready first); prints what it measured.
 *   1. compose up (with deploy/compose.local-images.yml when CONTAINER_IMAGES=local), gateway ready; NATS refuses a
 *      client without credentials (every service got in with its own .creds file, or it would not be ready)
 *   2. an API key, a webhook destination, an event: the signed delivery arrives and verifies (standardwebhooks)
 *   3. events keep coming while events-ingest gets SIGTERM: it exits 0, and after it is started again every event
 *      that was accepted (2xx) is delivered; none is lost
 *   4. compose down, volumes removed (also on failure; SMOKE_KEEP=1 leaves the stack up for a look)
 * The receiver runs inside the webhook-dispatcher container (`exec node -e ...` on 127.0.0.1), the one place a
 * loopback URL reaches it; ALLOW_LOOPBACK_WEBHOOKS is set for this run only, in a generated override file.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Webhook } from 'standardwebhooks';
import { SERVICE_NAMES } from '@platform/contracts';
import { localSecrets, repoRoot } from '@platform/testkit';

const engine = process.env.CONTAINER_ENGINE ?? 'podman';
const localImages = process.env.CONTAINER_IMAGES === 'local';
const state = join(repoRoot, '.tools', 'containers');
const project = `platform-smoke-${process.pid}`;
const log = (msg: string) => console.log(`[compose-smoke] ${msg}`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** scripts/containers/compose.sh: docker compose, or podman-compose with the local-images override. */
function composeCommand(envFile: string, override: string): [string, string[]] {
  return [
    'bash',
    [join(repoRoot, 'scripts', 'containers', 'compose.sh'), '-p', project, '--env-file', envFile, '-f', override],
  ];
}

function run(cmd: string, args: string[], timeoutMs = 600_000): string {
  return execFileSync(cmd, args, {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: timeoutMs,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function containerOf(service: string): string {
  const out = run(engine, [
    'ps',
    '-a',
    '-q',
    '--filter',
    `label=com.docker.compose.project=${project}`,
    '--filter',
    `label=com.docker.compose.service=${service}`,
  ]);
  const id = out.trim().split('\n')[0];
  if (!id) throw new Error(`no container for service ${service}`);
  return id;
}

/** The image's health check, run in the container: /readyz answers 200 once the service's dependencies do. */
function ready(container: string): boolean {
  try {
    run(engine, ['exec', container, 'node', '/app/healthcheck.js', '/readyz'], 15_000);
    return true;
  } catch {
    return false;
  }
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${last})` : ''}`);
}

/**
 * A client without credentials, from inside the gateway's container (NATS publishes no port): the server's INFO must
 * say authentication is required and its answer to CONNECT must be an authorization error. Returns what it said.
 */
function anonymousNatsAnswer(container: string): string {
  const code = `const s=require('net').connect(4222,'nats');let b='',sent=false,done=false;
const end=()=>{if(!done){done=true;process.stdout.write(JSON.stringify(b));s.destroy()}};
s.setTimeout(10000,end);s.on('close',end);s.on('error',end);
s.on('data',(d)=>{b+=d;if(!sent&&b.includes('\\r\\n')){sent=true;s.write('CONNECT {"verbose":false,"protocol":1}\\r\\nPING\\r\\n')}if(/-ERR|PONG/.test(b))end()});`;
  return JSON.parse(run(engine, ['exec', container, 'node', '-e', code], 30_000)) as string;
}

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

/** A webhook receiver inside the dispatcher's container: every request becomes one JSON line on stdout. */
function startReceiver(
  container: string,
  port: number,
): {
  child: ChildProcess;
  deliveries: Delivery[];
  next: (pred: (d: Delivery) => boolean, timeoutMs: number) => Promise<Delivery>;
} {
  const code = `require('http').createServer((q,s)=>{let b='';q.on('data',c=>b+=c);q.on('end',()=>{process.stdout.write(JSON.stringify({headers:q.headers,body:b})+'\\n');s.end()})}).listen(${port},'127.0.0.1',()=>process.stdout.write('{"listening":true}\\n'))`;
  const child = spawn(engine, ['exec', '-i', container, 'node', '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  const deliveries: Delivery[] = [];
  const waiters: Array<() => void> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const msg = JSON.parse(line);
    if (msg.listening) deliveries.push({ headers: { listening: 'true' }, body: '' });
    else deliveries.push(msg as Delivery);
    for (const w of waiters.splice(0)) w();
  });
  const next = (pred: (d: Delivery) => boolean, timeoutMs: number) =>
    new Promise<Delivery>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching delivery within ${timeoutMs} ms`)), timeoutMs);
      const check = () => {
        const found = deliveries.find(pred);
        if (found) {
          clearTimeout(timer);
          resolve(found);
        } else waiters.push(check);
      };
      check();
    });
  return { child, deliveries, next };
}

async function main(): Promise<void> {
  mkdirSync(state, { recursive: true });
  const gatewayPort = await freePort();
  const analyticsPort = await freePort();
  const envFile = join(state, 'compose-smoke.env');
  const secrets = localSecrets();
  writeFileSync(
    envFile,
    Object.entries({
      ...secrets,
      GATEWAY_HOST_PORT: gatewayPort,
      ANALYTICS_HOST_PORT: analyticsPort,
      LOG_LEVEL: 'warn',
    })
      .map(([k, v]) => `${k}=${v}`)
      .join('\n') + '\n',
  );
  const override = join(state, 'compose-smoke.override.yml');
  writeFileSync(
    override,
    [
      'services:',
      ...['management', 'webhook-dispatcher'].flatMap((s) => [
        `  ${s}:`,
        '    environment:',
        '      ALLOW_LOOPBACK_WEBHOOKS: "true"',
      ]),
      // its stop is what step 3 checks: the lines of a stop that goes wrong are printed
      '  events-ingest:',
      '    environment:',
      '      LOG_LEVEL: info',
    ].join('\n') + '\n',
  );
  const [compose, args] = composeCommand(envFile, override);
  const api = `http://127.0.0.1:${gatewayPort}`;
  const admin = { authorization: `Bearer ${secrets.ADMIN_TOKEN}`, 'content-type': 'application/json' };
  let receiver: ChildProcess | undefined;
  try {
    log(`compose up (${engine}, ${localImages ? 'local images' : 'registry images'}), gateway on ${api}`);
    const t0 = Date.now();
    run(compose, [...args, 'up', '-d'], 900_000);
    // podman 4.3 runs no health checks by itself (they need systemd) and podman-compose then ignores the
    // service_healthy conditions: wait here for every service's /readyz (the image's health check command).
    for (const service of SERVICE_NAMES)
      await until(`${service} to be ready`, 300_000, async () => (ready(containerOf(service)) ? true : undefined));
    await until('the gateway to be ready', 60_000, async () => ((await fetch(`${api}/readyz`)).ok ? true : undefined));
    const stackSeconds = (Date.now() - t0) / 1000;
    log(`compose up to every service ready: ${stackSeconds.toFixed(1)} s`);
    const anonymous = anonymousNatsAnswer(containerOf('gateway'));
    if (!anonymous.includes('"auth_required":true') || !/-ERR 'Authorization Violation'/.test(anonymous)) {
      throw new Error(`NATS in Compose admitted a client without credentials, or answered unexpectedly: ${anonymous}`);
    }
    log(
      'NATS refuses a client without credentials (auth_required, Authorization Violation); every service connected with its own',
    );

    // 2. the quick start: key, destination, event, a signed delivery
    const p = `${api}/manage/tenants/acme/projects/demo`;
    const agent = {
      id: 'support-bot',
      name: 'Support bot',
      defaultSubAgentId: 'main',
      subAgents: { main: { id: 'main', name: 'Main', type: 'internal', prompt: 'Help.' } },
    };
    const agentRes = await fetch(`${p}/agent`, { method: 'POST', headers: admin, body: JSON.stringify(agent) });
    if (agentRes.status !== 201)
      throw new Error(`creating the agent answered ${agentRes.status}: ${await agentRes.text()}`);
    const keyRes = await fetch(`${p}/api-keys`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ agentId: 'support-bot', name: 'quick start' }),
    });
    if (keyRes.status !== 201) throw new Error(`creating an API key answered ${keyRes.status}: ${await keyRes.text()}`);
    const key = ((await keyRes.json()) as { data: { key: string } }).data.key;
    const hookPort = 4000;
    const rec = startReceiver(containerOf('webhook-dispatcher'), hookPort);
    receiver = rec.child;
    await rec.next((d) => d.headers.listening === 'true', 60_000);
    const destRes = await fetch(`${p}/webhook-destinations`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ name: 'smoke', url: `http://127.0.0.1:${hookPort}/hook`, eventTypes: ['event.created'] }),
    });
    if (destRes.status !== 201)
      throw new Error(`creating a webhook destination answered ${destRes.status}: ${await destRes.text()}`);
    const secret = ((await destRes.json()) as { data: { secret: string } }).data.secret;
    const postEvent = (id: string) =>
      fetch(`${api}/run/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id, type: 'page.viewed' }),
      });
    const first = await postEvent('e-1');
    if (first.status !== 201) throw new Error(`posting an event answered ${first.status}: ${await first.text()}`);
    const eventIdOf = (d: Delivery): string | undefined => (d.body ? JSON.parse(d.body)?.data?.event?.id : undefined);
    const delivery = await rec.next((d) => eventIdOf(d) === 'e-1', 60_000);
    new Webhook(secret).verify(delivery.body, delivery.headers); // throws on a bad signature
    log('quick start: API key, event e-1 (201), signed webhook received and verified');

    // 3. SIGTERM to events-ingest while events keep coming: accepted events are all delivered
    const ingest = containerOf('events-ingest');
    const accepted: string[] = [];
    let refused = 0;
    let termSent = false;
    let stopped: Promise<string> | undefined;
    for (let i = 0; i < 200 && !(termSent && refused > 0); i++) {
      const id = `drain-${i}`;
      const res = await postEvent(id).catch(() => undefined);
      if (res && res.status >= 200 && res.status < 300) accepted.push(id);
      else refused++;
      if (accepted.length === 5 && !termSent) {
        termSent = true;
        // `stop` sends SIGTERM (the image's stop signal), waits up to 30 s, then SIGKILL; it also keeps the restart
        // policy from starting the container again. Exit code 0 means the service drained and stopped by itself.
        const t = Date.now();
        stopped = new Promise((resolve) => {
          const w = spawn(engine, ['stop', '-t', '30', ingest], { stdio: 'ignore' });
          w.on('exit', () =>
            resolve(
              `${run(engine, ['inspect', '--format', '{{.State.ExitCode}}', ingest]).trim()} after ${((Date.now() - t) / 1000).toFixed(1)} s`,
            ),
          );
        });
      }
    }
    if (!stopped) throw new Error('events-ingest never got the SIGTERM');
    const exit = await stopped;
    if (!exit.startsWith('0 ')) {
      const restarts = run(engine, ['inspect', '--format', '{{.RestartCount}}', ingest]).trim();
      const lines = execFileSync('sh', ['-c', `${engine} logs --tail 40 ${ingest} 2>&1`], { encoding: 'utf8' });
      log(`events-ingest's last lines (restarted ${restarts} times before):\n${lines}`);
      throw new Error(`events-ingest did not exit cleanly on SIGTERM (exit code ${exit})`);
    }
    log(
      `SIGTERM to events-ingest: exit code ${exit}, ${accepted.length} events accepted before, ${refused} refused while it was down`,
    );
    const t1 = Date.now();
    run(engine, ['start', ingest]);
    await until('events-ingest to be ready again', 120_000, async () => (ready(ingest) ? true : undefined));
    log(`events-ingest started again and ready in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    for (const id of accepted) await rec.next((d) => eventIdOf(d) === id, 120_000);
    const ids = new Set(rec.deliveries.map(eventIdOf).filter(Boolean));
    log(`every accepted event (${accepted.length}) delivered after the drain; ${ids.size} distinct events received`);
    console.log(`SMOKE stack_ready_s=${stackSeconds.toFixed(1)}`);
  } finally {
    receiver?.kill();
    if (process.env.SMOKE_KEEP === '1') log(`SMOKE_KEEP=1: the stack stays up (project ${project})`);
    else {
      try {
        run(compose, [...args, 'down', '-v', '-t', '10'], 300_000);
      } catch (err) {
        log(`compose down failed: ${err}`);
      }
    }
  }
}

main().then(
  () => log('passed'),
  (err) => {
    console.error(`[compose-smoke] FAILED: ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  },
);
