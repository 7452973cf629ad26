import { pendingEvent, triggerInvoked, type PendingEvent } from '@platform/contracts';
import type { Publisher } from '@platform/bus';
import { getLogger } from '@platform/logger';
import type { StoredDispatch, StoredTriggerInvocation, TriggerInvocationRepo } from '../data/trigger-invocation.repo';

const log = getLogger('management.trigger-dispatcher');

export const dispatchesOf = (doc: Pick<StoredTriggerInvocation, 'dispatches'>): StoredDispatch[] =>
  Object.values(doc.dispatches ?? {}).sort((a, b) => a.index - b.index);

/** The `trigger.invoked` event of one request, rebuilt from the stored invocation (the same bytes on every publish). */
export function invokedEvent(doc: StoredTriggerInvocation, d: StoredDispatch): PendingEvent {
  const scope = { tenantId: doc.tenantId, projectId: doc.projectId };
  const data = {
    ...scope,
    agentId: doc.agentId,
    triggerId: doc.triggerId,
    invocationId: doc.id,
    userId: d.userId,
    message: doc.message ?? '',
    input: doc.inputJson ? JSON.parse(doc.inputJson) : null,
    dispatchIndex: d.index,
    rerunOf: doc.rerunOf ?? null,
  };
  const event = pendingEvent(triggerInvoked, d.eventId, scope, data, new Date(d.dueAt).toISOString());
  return doc.traceparent ? { ...event, traceparent: doc.traceparent } : event;
}

export type TriggerDispatcher = ReturnType<typeof triggerDispatcher>;

/**
 * Publishes the execution requests of accepted invocations when they fall due. The invocation and all its requests
 * are one document written before the caller hears 202 (the outbox pattern: the change and its events in one write);
 * a request is published with its event id as Nats-Msg-Id (JetStream drops a second publish), then marked
 * dispatched. Requests due soon get a timer in the process that stored them; a sweep at start and every `sweepMs`
 * publishes whatever is due and still pending (a process that died, a long delay), so nothing accepted is lost.
 */
export function triggerDispatcher(repo: TriggerInvocationRepo, pub: Publisher, opts: { sweepMs: number }) {
  const timers = new Set<NodeJS.Timeout>();
  /** Requests being published by this process (`<key>#<index>`), so a timer and the sweep do not both publish. */
  const inFlight = new Set<string>();
  let stopped = false;

  const publishDue = async (doc: StoredTriggerInvocation, now = Date.now()): Promise<void> => {
    const all = dispatchesOf(doc);
    for (const d of all) {
      const slot = `${doc._id}#${d.index}`;
      if (d.state !== 'pending' || new Date(d.dueAt).getTime() > now || inFlight.has(slot)) continue;
      inFlight.add(slot);
      try {
        await pub.publishPending([invokedEvent(doc, d)]);
        const at = new Date();
        await repo.markDispatched(doc._id, d.index, at);
        d.state = 'dispatched';
        d.dispatchedAt = at;
      } finally {
        inFlight.delete(slot);
      }
    }
    if (all.every((d) => d.state === 'dispatched')) await repo.markComplete(doc._id, all, new Date());
  };

  /** Publishes the due requests of one invocation, read afresh (another replica may have published some). */
  const publishStored = async (key: string) => {
    const doc = await repo.findByKey(key);
    if (doc && doc.dispatchPending) await publishDue(doc);
  };

  const sweep = async (): Promise<number> => {
    const docs = await repo.withPendingDispatches();
    for (const doc of docs)
      await publishDue(doc).catch((err) =>
        log.warn({ err, invocationId: doc.id }, 'trigger dispatch failed; the sweep will retry'),
      );
    return docs.length;
  };

  const interval = setInterval(() => {
    if (!stopped) sweep().catch((err) => log.warn({ err }, 'trigger dispatch sweep failed'));
  }, opts.sweepMs);
  interval.unref();

  return {
    /** Sets timers for the requests of a just-stored invocation that fall due before the next few sweeps. */
    schedule(doc: StoredTriggerInvocation): void {
      for (const d of dispatchesOf(doc)) {
        const wait = Math.max(0, new Date(d.dueAt).getTime() - Date.now());
        if (stopped || wait > opts.sweepMs * 3) continue;
        const timer = setTimeout(() => {
          timers.delete(timer);
          publishStored(doc._id).catch((err) =>
            log.warn({ err, invocationId: doc.id }, 'trigger dispatch failed; the sweep will retry'),
          );
        }, wait);
        timer.unref();
        timers.add(timer);
      }
    },
    sweep,
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(interval);
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
