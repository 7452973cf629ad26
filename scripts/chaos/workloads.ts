// The workloads a fault runs under, each with its read-back: run events (and their webhook deliveries), feedback
// creates, dataset item creates, analytics events.
import { anAnalyticsKey, anApiKey, aProject, projectPath, withDatabase, type Receiver } from '@platform/testkit';
import { get, load, type LoadResult, type LoadShape, post, type Step, tally } from './load';
import { killAndRestart } from './process-faults';
import { type Delivered, readRows, rowOf, storedIdOf } from './readback';
import type { Row } from './report';
import { dbPrefix, DELIVERY_WAIT_MS, say, sleep } from './run';
import type { Env } from './stacks';

/** How a run-events load is sent: to which gateway, by how many writers, and who looks at its result. */
export interface RunEventsOptions {
  /** The gateway of each request (default: the stack's). */
  base?: () => string;
  shape?: LoadShape;
  /** Sees the load's result before the read-back (answer times). */
  onLoad?: (r: LoadResult) => void;
}

/** Run events through the gateway (and, with a receiver, their webhook deliveries); read back from events-ingest. */
export async function runEventsFault(
  name: string,
  env: Env,
  fault: (end: () => void) => Promise<void>,
  signal: AbortSignal,
  receiver?: Receiver,
  opts: RunEventsOptions = {},
): Promise<Row> {
  const base = opts.base ?? (() => env.stack.gatewayUrl);
  const p = aProject();
  const { key } = await anApiKey(env.admin, p);
  if (receiver) {
    const res = await env.admin.post(`${projectPath(p)}/webhook-destinations`, {
      name: 'chaos',
      url: receiver.url,
      eventTypes: ['event.created'],
    });
    if (res.status !== 201) throw new Error(`creating the webhook destination: ${res.status}`);
  }
  // Events with an id: safe to repeat (the gateway sends one again to another replica when none answered).
  const r = await load(
    { write: (i) => post(`${base()}/run/v1/events`, key, { id: `c-${i}`, type: 'chaos.tested' }), writeSafe: true },
    fault,
    signal,
    opts.shape,
  );
  opts.onLoad?.(r);
  say(`${name}: ${r.accepted.size} accepted; reading back`);
  const stored = await readRows(env.stack.env.MONGO_URL!, 'events-ingest', 'runEvents', {
    tenantId: p.tenantId,
    projectId: p.projectId,
  });
  const ids = stored.map(storedIdOf);
  let delivered: Delivered[] | undefined;
  if (receiver) {
    const ours = (x: { json?: any }) => x.json?.tenantId === p.tenantId;
    // Deliveries are retried on their schedule: wait until every accepted event arrived (or the phase's bound).
    const want = new Set([...r.accepted].map((i) => `c-${i}`));
    // Long enough for a claim left by a killed dispatcher to run out (its lease is about 50 s) and the retries after.
    const deadline = Date.now() + DELIVERY_WAIT_MS;
    while (!signal.aborted && Date.now() < deadline) {
      const got = new Set(receiver.received.filter(ours).map((x) => x.json.data.event.id as string));
      if ([...want].every((id) => got.has(id))) break;
      await sleep(250, signal);
    }
    await sleep(2000, signal); // late duplicates (a redelivered message) would show up now
    delivered = receiver.received
      .filter(ours)
      .map((x) => ({ eventId: x.json.data.event.id as string, webhookId: String(x.headers['webhook-id']), at: x.at }));
  }
  return rowOf(name, r, (i) => `c-${i}`, ids, delivered);
}

/** A kind of create that is not safe to repeat (no Idempotency-Key): where it goes, and where its rows are stored. */
interface Creates {
  service: 'management' | 'evals';
  /** The row's name when the fault is a SIGKILL of the service (restarted at once). */
  row: string;
  /** Under the project's path; `<path>/<id>` reads one back. */
  path: string;
  id: (i: number) => string;
  body: (id: string, i: number) => unknown;
  collection: string;
}

/**
 * Creates of one kind in a new project under a fault (default: a SIGKILL of their service), each accepted one read back
 * by id (safe) when `reads`; after the load, the rows stored in the service's database are matched with the accepted
 * creates.
 */
const createsFault =
  (c: Creates) =>
  async (
    env: Env,
    signal: AbortSignal,
    name = c.row,
    fault = killAndRestart(env.stack, c.service),
    reads = false,
  ): Promise<Row> => {
    const p = aProject();
    const url = `${env.stack.gatewayUrl}${projectPath(p)}${c.path}`;
    const step: Step = { write: (i) => post(url, env.adminToken, c.body(c.id(i), i)), writeSafe: false };
    if (reads) step.read = (i) => get(`${url}/${c.id(i)}`, env.adminToken);
    const r = await load(step, fault, signal);
    const stored = await readRows(env.stack.env.MONGO_URL!, c.service, c.collection, {
      tenantId: p.tenantId,
      projectId: p.projectId,
    });
    return rowOf(name, r, c.id, stored.map(storedIdOf));
  };

/** Feedback creates. */
export const managementFault = createsFault({
  service: 'management',
  row: 'SIGKILL management (feedback creates)',
  path: '/feedback',
  id: (i) => `fb-${i}`,
  body: (id) => ({ id, conversationId: 'c', type: 'positive' }),
  collection: 'feedback',
});

/** Dataset item creates. */
export const evalsFault = createsFault({
  service: 'evals',
  row: 'SIGKILL evals (dataset item creates)',
  path: '/evals/dataset-items/chaos/items',
  id: (i) => `ev-${i}`,
  body: (id, i) => ({ id, input: { messages: [{ role: 'user', content: `question ${i}` }] } }),
  collection: 'datasetItems',
});

/** Analytics events with an id (safe to repeat), each accepted one followed by a read of the counts (safe) when `reads`. */
export async function analyticsFault(
  env: Env,
  signal: AbortSignal,
  name = 'SIGKILL analytics (ingest)',
  fault = killAndRestart(env.stack, 'analytics'),
  reads = false,
): Promise<Row> {
  const p = aProject();
  const { key } = await anAnalyticsKey(env.admin, p);
  const step: Step = {
    write: (i) =>
      post(`${env.analyticsUrl}/events`, key, { id: `a-${i}`, entityType: 'message', messageId: 'm', type: 'chaos' }),
    writeSafe: true,
  };
  if (reads) step.read = () => get(`${env.stack.gatewayUrl}${projectPath(p)}/analytics/counts`, env.adminToken);
  const r = await load(step, fault, signal);
  return rowOf(name, r, (i) => `a-${i}`, await storedAnalyticsIds(env, p, 'a-'));
}

/** The ids starting with `prefix` of a project's stored analytics events (of the collection that holds most of them). */
export async function storedAnalyticsIds(
  env: Env,
  p: { tenantId: string; projectId: string },
  prefix: string,
): Promise<string[]> {
  const collections = await withDatabase(
    env.stack.env.MONGO_URL!,
    'analytics',
    async (db) => (await db.listCollections().toArray()).map((c) => c.name),
    dbPrefix,
  );
  let ids: string[] = [];
  for (const c of collections) {
    const found = await readRows(env.stack.env.MONGO_URL!, 'analytics', c, {
      tenantId: p.tenantId,
      projectId: p.projectId,
    });
    const withIds = found.map((d) => String((d as { id?: string }).id ?? '')).filter((id) => id.startsWith(prefix));
    if (withIds.length > ids.length) ids = withIds;
  }
  return ids;
}

/**
 * Feedback creates with an Idempotency-Key and no id of their own (only the key keeps a repeat from creating twice),
 * each accepted one sent once more with its key, and with `repeatAll` every accepted one once more after the load (the
 * ones accepted before the fault then cross it); read back by conversation id, one record per create.
 */
export async function keyedCreatesFault(
  name: string,
  env: Env,
  fault: (end: () => void) => Promise<void>,
  signal: AbortSignal,
  repeatAll = false,
): Promise<Row> {
  const p = aProject();
  const path = `${env.stack.gatewayUrl}${projectPath(p)}/feedback`;
  const send = (i: number) =>
    post(
      path,
      env.adminToken,
      { conversationId: `k-${i}`, type: 'positive' },
      { 'idempotency-key': `${p.projectId}-k-${i}` },
    );
  const r = await load({ write: send, writeSafe: true, read: send }, fault, signal);
  if (repeatAll) {
    say(`${name}: every accepted create once more with its key`);
    for (const i of r.accepted) if (!signal.aborted) tally(r, await send(i), true);
  }
  const stored = await readRows(env.stack.env.MONGO_URL!, 'management', 'feedback', {
    tenantId: p.tenantId,
    projectId: p.projectId,
  });
  return rowOf(
    name,
    r,
    (i) => `k-${i}`,
    stored.map((d) => String((d as { conversationId?: unknown }).conversationId)),
  );
}
