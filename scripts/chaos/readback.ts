// What a fault did, read back: the stored rows of the owning service's database (and the webhook receiver's
// deliveries), set against what the API accepted.
import { withDatabase } from '@platform/testkit';
import type { LoadResult } from './load';
import type { Row } from './report';
import { dbPrefix, say } from './run';

export async function readRows(mongoUrl: string, service: string, collection: string, filter: Record<string, unknown>) {
  return withDatabase(mongoUrl, service, async (db) => db.collection(collection).find(filter).toArray(), dbPrefix);
}

/** A stored row's own id: its `id` field, or the end of a scoped `_id` (`<tenant>:<project>:<id>`, run events keep it only there). */
export const storedIdOf = (d: { id?: unknown; _id: unknown }) =>
  d.id != null ? String(d.id) : String(d._id).split(':').pop()!;

export interface Delivered {
  eventId: string;
  webhookId: string;
  at: number;
}

/**
 * A row from what was accepted and the ids found afterwards (`found` may hold an id more than once); with
 * `delivered`, an accepted write also counts as lost when it never reached the receiver, and recovery also waits for
 * the first delivery after the fault.
 */
export function rowOf(
  fault: string,
  r: LoadResult,
  key: (i: number) => string,
  found: string[],
  delivered?: Delivered[],
): Row {
  const have = new Set(found);
  const missing = new Set([...r.accepted].map(key).filter((k) => !have.has(k)));
  let duplicated = found.length - have.size;
  let redeliveries: number | undefined;
  let recoverMs = r.recoverMs;
  if (delivered) {
    const got = new Set(delivered.map((d) => d.eventId));
    for (const i of r.accepted) if (!got.has(key(i))) missing.add(key(i));
    duplicated += delivered.length - got.size;
    // Of those, the ones that repeat an earlier delivery's webhook-id (one delivery record sent twice).
    redeliveries = delivered.length - new Set(delivered.map((d) => d.webhookId)).size;
    const firstAfter = delivered.filter((d) => d.at >= r.faultEnd).reduce((m, d) => Math.min(m, d.at), Infinity);
    const deliveryRecovery = Number.isFinite(firstAfter) ? firstAfter - r.faultEnd : 'never';
    if (recoverMs === 'never' || deliveryRecovery === 'never') recoverMs = 'never';
    else recoverMs = recoverMs === 'load ended first' ? deliveryRecovery : Math.max(recoverMs, deliveryRecovery);
  }
  // The first lost writes with every answer their requests got, to find where they went.
  const lostIds = [...r.accepted]
    .filter((i) => missing.has(key(i)))
    .slice(0, 20)
    .map((i) => `${key(i)} (${r.answers.get(i)?.join(',')})`);
  if (lostIds.length) say(`${fault}: lost ${lostIds.join('; ')}`);
  return {
    fault,
    sent: r.sent,
    accepted: r.accepted.size,
    lost: missing.size,
    lostIds,
    duplicated,
    '5xx': r.fivexx,
    '5xxSafe': r.fivexxSafe,
    '5xxNotSafe': r.fivexxNotSafe,
    failed: r.failed,
    errors: r.errors,
    recoverMs,
    redeliveries,
  };
}
