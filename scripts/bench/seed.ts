// Rows written straight into the services' own databases, in the services' own document shapes, so the bench can
// measure a path with a large collection behind it without spending minutes going through the API.
// When a model changes, change the matching function here (and only here).
import { randomUUID } from 'node:crypto';
import { randomId } from '@platform/secrets';
import { withDatabase } from '@platform/testkit';

/** Inserts `n` documents made by `make(i)` into `<prefix>_<service>.<collection>`, 1,000 per insertMany. */
async function insertInBatches(
  mongoUrl: string,
  dbPrefix: string,
  service: string,
  collection: string,
  n: number,
  make: (i: number) => Record<string, unknown>,
) {
  await withDatabase(
    mongoUrl,
    service,
    async (db) => {
      const col = db.collection(collection);
      for (let done = 0; done < n; ) {
        const size = Math.min(1000, n - done);
        await col.insertMany(
          Array.from({ length: size }, (_, j) => make(done + j) as never),
          { ordered: false },
        );
        done += size;
      }
    },
    dbPrefix,
  );
}

/** API keys of one project (management: services/management/src/data/api-key.model.ts), newest first by createdAt. */
export async function seedApiKeys(
  mongoUrl: string,
  dbPrefix: string,
  scope: { tenantId: string; projectId: string },
  n: number,
): Promise<void> {
  const now = Date.now();
  await insertInBatches(mongoUrl, dbPrefix, 'management', 'apiKeys', n, (i) => ({
    _id: randomId(12),
    ...scope,
    agentId: `agent-${i % 10}`,
    name: `seed ${i}`,
    keyPrefix: 'sk_seed',
    keyHash: randomId(43),
    expiresAt: null,
    lastUsedAt: null,
    createdAt: new Date(now - i * 1000),
    updatedAt: new Date(now - i * 1000),
    live: true,
  }));
}

export interface WriteHistory {
  tenantId: string;
  projectId: string;
  /** WEBHOOK_PARTITION of the stack: deliveries the dispatcher of this run would see. */
  partition: string;
  destinationId: string;
}

/** One stored run event as events-ingest stores it (a packed row: services/events-ingest/src/data/run-event.repo.ts
 * `storedRow`), its events published (no outbox fields left). */
function runEventDoc(h: WriteHistory, at: Date) {
  return {
    _id: `${h.tenantId}:${h.projectId}:${randomUUID()}`,
    tenantId: h.tenantId,
    projectId: h.projectId,
    conversationId: 'c-1',
    userProperties: JSON.stringify({ id: 'u-1' }),
    createdAt: at,
    body: JSON.stringify({ type: 'bench.event', properties: { n: 1 }, serverMetadata: { authMethod: 'apiKey' } }),
  };
}

/**
 * One finished webhook delivery: its one attempt row in the insert-only delivery log (webhook-dispatcher:
 * services/webhook-dispatcher/src/data/attempt.model.ts). When the log's shape changes, this function and
 * DELIVERY_COLLECTION are the one place to adapt.
 */
export const DELIVERY_COLLECTION = 'deliveryAttempts';
function deliveryDoc(h: WriteHistory, at: Date) {
  const eventId = randomUUID();
  const deliveryId = `msg_${randomId(24)}`;
  return {
    _id: `${deliveryId}#1`,
    partition: h.partition,
    tenantId: h.tenantId,
    projectId: h.projectId,
    destinationId: h.destinationId,
    deliveryId,
    eventId,
    eventType: 'event.created',
    kind: 'attempt',
    attempt: 1,
    at,
    statusCode: 200,
    ok: true,
    error: null,
    durationMs: 3,
    status: 'delivered',
    nextAttemptAt: null,
    latest: true,
    deliveryCreatedAt: at,
    body: JSON.stringify({
      type: 'event.created',
      data: { event: { id: eventId, type: 'bench.event', createdAt: at.toISOString() } },
    }),
  };
}

/** `n` stored run events and `n` finished deliveries of one project, as a platform that has been running would hold. */
export async function seedWriteHistory(mongoUrl: string, dbPrefix: string, h: WriteHistory, n: number): Promise<void> {
  const now = Date.now();
  await insertInBatches(mongoUrl, dbPrefix, 'events-ingest', 'runEvents', n, (i) =>
    runEventDoc(h, new Date(now - (n - i) * 10)),
  );
  await insertInBatches(mongoUrl, dbPrefix, 'webhook-dispatcher', DELIVERY_COLLECTION, n, (i) =>
    deliveryDoc(h, new Date(now - (n - i) * 10)),
  );
}

/** How many documents a service's collection holds (to print beside a growth row). */
export async function countStored(
  mongoUrl: string,
  dbPrefix: string,
  service: string,
  collection: string,
): Promise<number> {
  return withDatabase(mongoUrl, service, (db) => db.collection(collection).estimatedDocumentCount(), dbPrefix);
}
