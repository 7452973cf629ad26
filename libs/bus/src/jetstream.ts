import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
  ErrorCode,
  type NatsConnection,
  nanos,
} from 'nats';
import type { z } from 'zod';
import {
  type EventDef,
  type EventEnvelope,
  platformEventsStreamDef,
  type StoredPendingEvent,
  type StreamDef,
} from '@platform/contracts';
import { getLogger, runWithContext } from '@platform/logger';
import { SpanKind, contextFromHeaders, counter, inSpan, trackConsumerPending, traceHeaders } from '@platform/telemetry';
import { RawJson, decode, encode, headerMap, headersOf } from './codec';
import { natsReachable, onDisconnect } from './connection';
import { natsError, RequestMux } from './request-mux';

const log = getLogger('bus.jetstream');

export interface StreamSpec {
  name: string;
  subjects: string[];
  retention?: 'limits' | 'workqueue' | 'interest';
  maxAgeMs?: number;
  duplicateWindowMs?: number;
}

/** The stream a declaration in libs/contracts (internal/streams.ts) describes. */
export function streamSpec(def: StreamDef): StreamSpec {
  return {
    name: def.name,
    subjects: [...def.subjects],
    retention: def.retention,
    maxAgeMs: def.maxAgeMs,
    duplicateWindowMs: def.duplicateWindowMs,
  };
}

export const platformEventsStream: StreamSpec = streamSpec(platformEventsStreamDef);

/** JetStream API errors worth another try: the server was slow (TIMEOUT) or not reachable for a moment (503). */
function transient(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === 'TIMEOUT' || e?.code === '503' || /timeout|no responders/i.test(String(e?.message ?? ''));
}

/**
 * Retries a JetStream management step while the server is slow or briefly away (a loaded machine, a restarting
 * node), so a service does not exit during start because of one late answer.
 */
export async function retryTransient<T>(step: () => Promise<T>, budgetMs = 60_000): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let delay = 200; ; delay = Math.min(delay * 2, 3_000)) {
    try {
      return await step();
    } catch (err) {
      if (!transient(err) || Date.now() + delay > deadline) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

export async function ensureStream(jsm: JetStreamManager, spec: StreamSpec, replicas = 1): Promise<void> {
  const cfg = {
    name: spec.name,
    subjects: spec.subjects,
    retention:
      spec.retention === 'workqueue'
        ? RetentionPolicy.Workqueue
        : spec.retention === 'interest'
          ? RetentionPolicy.Interest
          : RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: replicas,
    max_age: spec.maxAgeMs ? nanos(spec.maxAgeMs) : 0,
    duplicate_window: nanos(spec.duplicateWindowMs ?? 2 * 60 * 1000),
  };
  await retryTransient(async () => {
    try {
      await jsm.streams.info(spec.name);
      return;
    } catch (err) {
      if (transient(err)) throw err;
      /* not there yet */
    }
    try {
      await jsm.streams.add(cfg);
    } catch (err) {
      // another replica may have created it at the same moment
      const msg = String((err as Error).message ?? err);
      if (!/already in use|exists/i.test(msg)) throw err;
    }
  });
}

export interface Publisher {
  /**
   * Publishes with `msgID` so JetStream drops a second publish of the same id. Without `headers` the active trace
   * context is attached; an outbox entry carries the one of the request that wrote it.
   */
  publish(
    subject: string,
    data: unknown,
    msgId: string,
    headers?: Record<string, string>,
  ): Promise<{ duplicate: boolean }>;
  /** Publishes events as the outbox stored them (an envelope may be its JSON text). */
  publishPending(events: StoredPendingEvent[]): Promise<void>;
}

/** JetStream's answer to a publish: where the message was stored, or the API's error. */
interface PubAck {
  stream?: string;
  duplicate?: boolean;
  error?: { code: number; err_code?: number; description?: string };
}

/**
 * Publishes to JetStream as nats.js's `js.publish` does (a request to the subject with `Nats-Msg-Id`; the stream
 * answers with its acknowledgement), over the connection's request multiplexer: nats.js's own request builds an
 * error with a stack trace for every answered request, 3 % of events-ingest's time under load.
 */
export function publisher(nc: NatsConnection, opts: { timeoutMs?: number } = {}): Publisher {
  const requests = new RequestMux(nc);
  const timeout = opts.timeoutMs ?? JS_API_TIMEOUT_MS;
  // A publish is never acknowledged once the connection is lost: nats.js drops what it had not written yet when it
  // dials again, and an acknowledgement sent to the lost connection is not kept for the next one. So a publish
  // waiting then, or made before the connection is back, fails at once (DISCONNECT) rather than at its timeout, and
  // its caller (the outbox) publishes it again, with the same Nats-Msg-Id, once NATS is back.
  const disconnect = () => natsError(ErrorCode.Disconnect, 'the connection to NATS was lost');
  onDisconnect(nc, () => requests.failWaiting(disconnect()));
  return {
    async publish(subject, data, msgId, hdrs) {
      if (!natsReachable(nc)) throw disconnect();
      // The trace context travels with the event: without headers of the caller's, the active span's.
      const h = headersOf({ ...(hdrs ?? traceHeaders()), 'Nats-Msg-Id': msgId });
      const reply = await requests.request(subject, encode(data), { timeout, headers: h });
      const ack = decode<PubAck>(reply.data);
      if (ack.error) {
        throw Object.assign(new Error(ack.error.description || `JetStream refused the message (${ack.error.code})`), {
          code: String(ack.error.code),
          apiError: ack.error,
        });
      }
      if (!ack.stream) throw new Error('JetStream answered the publish without a stream');
      return { duplicate: ack.duplicate === true };
    },
    async publishPending(events) {
      await Promise.all(
        events.map((e) =>
          this.publish(
            e.subject,
            typeof e.envelope === 'string' ? new RawJson(e.envelope) : e.envelope,
            e.id,
            e.traceparent ? { traceparent: e.traceparent } : {},
          ),
        ),
      );
    },
  };
}

const JS_API_TIMEOUT_MS = 15_000;

export interface ConsumeOptions<T> {
  stream: string;
  durable: string;
  filterSubjects: string[];
  /** How long a message may be worked before it is redelivered. */
  ackWaitMs?: number;
  maxDeliver?: number;
  /**
   * Messages delivered and not yet acknowledged, at most (default: 4 x concurrency, at least 1000). Messages handed
   * back with a delay count too, so a consumer of delayed jobs wants -1 (no limit).
   */
  maxAckPending?: number;
  /** Messages worked at once by this process. */
  concurrency?: number;
  /** Delay before a failed message is redelivered. */
  nakDelayMs?: number;
  /** Where a new durable starts: every stored message (default) or only those published from now on. */
  deliverPolicy?: 'all' | 'new';
  parse?: z.ZodType<T>;
  /** Terminate (never redeliver) a message that is not JSON or fails `parse`, with one error log line; default: nak like any failure. */
  terminateInvalid?: boolean;
  /**
   * Works one message. It is acknowledged when this resolves, unless the handler answers `{ laterMs }`: then it goes
   * back to the stream and is delivered again after that delay (a job that is not due yet).
   */
  handler: (data: T, msg: JsMsg) => Promise<void | { laterMs: number }>;
  /**
   * Messages this answers true for (from what the process already knows, without reading the payload) have nothing
   * to do here: they are acknowledged unread, with no span and no slot, together in one socket write 20 ms after the
   * first of them (counted in `jetstream_messages_skipped_total`).
   */
  skip?: (msg: JsMsg) => boolean;
}

/** Skipped messages are acknowledged this long after the first of them (ms), or at once when this many wait. */
const SKIP_ACK_LINGER_MS = 20;
const SKIP_ACK_BATCH = 256;

const skippedMessages = () =>
  counter(
    'jetstream_messages_skipped_total',
    'Messages a consumer acknowledged unread because it had nothing to do with them',
    ['durable'],
  );

export interface RunningConsumer {
  stop(graceMs?: number): Promise<void>;
}

/**
 * A durable pull consumer: each message is acknowledged only after `handler` resolves; a failure is
 * nak'ed with a delay and redelivered. Replicas that use the same durable share the messages.
 */
export async function consumeDurable<T = unknown>(
  nc: NatsConnection,
  opts: ConsumeOptions<T>,
): Promise<RunningConsumer> {
  // JetStream API calls get more time than the default 5 s: replicas starting together on a loaded server queue up.
  const jsm = await nc.jetstreamManager({ timeout: JS_API_TIMEOUT_MS });
  const js = nc.jetstream({ timeout: JS_API_TIMEOUT_MS });
  const config = {
    durable_name: opts.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: opts.deliverPolicy === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
    ack_wait: nanos(opts.ackWaitMs ?? 30_000),
    max_deliver: opts.maxDeliver ?? -1,
    max_ack_pending: opts.maxAckPending ?? Math.max(1000, (opts.concurrency ?? 16) * 4),
    ...(opts.filterSubjects.length === 1
      ? { filter_subject: opts.filterSubjects[0] }
      : { filter_subjects: opts.filterSubjects }),
  };
  const ensure = async () => {
    try {
      await jsm.consumers.info(opts.stream, opts.durable);
    } catch (err) {
      if (transient(err)) throw err;
      try {
        await jsm.consumers.add(opts.stream, config);
        return;
      } catch (addErr) {
        if (!/already in use|exists/i.test(String((addErr as Error).message))) throw addErr;
      }
    }
    await jsm.consumers.update(opts.stream, opts.durable, {
      ack_wait: config.ack_wait,
      max_deliver: config.max_deliver,
      max_ack_pending: config.max_ack_pending,
      ...(opts.filterSubjects.length === 1
        ? { filter_subject: opts.filterSubjects[0] }
        : { filter_subjects: opts.filterSubjects }),
    });
  };
  await retryTransient(ensure);
  const consumer = await retryTransient(() => js.consumers.get(opts.stream, opts.durable));
  const concurrency = opts.concurrency ?? 16;
  let stopping = false;
  let inFlight = 0;
  let idle: (() => void) | undefined;
  let slot: (() => void) | undefined;
  let messages: ConsumerMessages | undefined;

  /** Messages being worked, so a stop that runs out of time can hand them back (nak) instead of leaving them. */
  const working = new Set<JsMsg>();
  const handedBack = new WeakSet<JsMsg>();

  const ackWaitMs = opts.ackWaitMs ?? 30_000;
  const work = async (m: JsMsg) => {
    inFlight++;
    working.add(m);
    // While the handler runs, the server is told so (ack wait restarts): a short ack wait then hands a crashed
    // process's messages to another replica quickly, without cutting off long work of a live one.
    const beat = setInterval(
      () => {
        try {
          m.working();
        } catch {
          /* connection gone: redelivered after ack_wait */
        }
      },
      Math.max(1_000, ackWaitMs / 3),
    );
    beat.unref();
    const hdrs = headerMap(m.headers);
    try {
      await inSpan(
        `process ${opts.durable}`,
        {
          kind: SpanKind.CONSUMER,
          parent: contextFromHeaders(hdrs),
          attributes: {
            'messaging.system': 'nats',
            'messaging.destination.name': m.subject,
            'messaging.consumer.group.name': opts.durable,
          },
        },
        async () => {
          let raw: unknown;
          let data: T;
          try {
            raw = decode<unknown>(m.data);
            data = opts.parse ? opts.parse.parse(raw) : (raw as T);
          } catch (err) {
            if (!opts.terminateInvalid) throw err;
            const id = (raw as Partial<EventEnvelope> | undefined)?.id;
            log.error(
              { durable: opts.durable, subject: m.subject, eventId: id, seq: m.seq, err: describeInvalid(err) },
              'invalid message terminated (not redelivered)',
            );
            m.term();
            handedBack.add(m);
            return;
          }
          const requestId = (raw as Partial<EventEnvelope>)?.id ?? hdrs['x-request-id'] ?? 'jetstream';
          const answer = await runWithContext({ requestId }, () => opts.handler(data, m));
          if (answer && !handedBack.has(m)) {
            m.nak(Math.max(0, Math.round(answer.laterMs)));
            handedBack.add(m);
          }
        },
      );
      // Acknowledged only when done, and never after the message was handed back at shutdown (or terminated).
      if (!handedBack.has(m)) m.ack();
    } catch (err) {
      log.warn(
        { err, durable: opts.durable, subject: m.subject, deliveries: m.info.redeliveryCount },
        'message handling failed; will be redelivered',
      );
      try {
        if (!handedBack.has(m)) m.nak(opts.nakDelayMs ?? 1000);
      } catch {
        /* connection gone: redelivered after ack_wait */
      }
    } finally {
      clearInterval(beat);
      working.delete(m);
      inFlight--;
      slot?.();
      if (inFlight === 0) idle?.();
    }
  };

  // Skipped messages are acknowledged together, a short while after the first of them: nats.js writes each
  // acknowledgement given in its own microtask turn to the socket on its own, and under a light load messages come one
  // at a time, so acknowledging each once iterated cost the consumer a write and nats-server a read per message. Nothing
  // waits on these acknowledgements; they only keep the messages from being redelivered after ack_wait.
  let skipped: JsMsg[] = [];
  let skipTimer: NodeJS.Timeout | undefined;
  const skippedCount = opts.skip ? skippedMessages().labels(opts.durable) : undefined;
  const ackSkipped = () => {
    clearTimeout(skipTimer);
    skipTimer = undefined;
    const batch = skipped;
    skipped = [];
    for (const m of batch) {
      try {
        m.ack();
      } catch {
        /* connection gone: redelivered after ack_wait, and skipped again */
      }
    }
    skippedCount?.inc(batch.length);
  };
  const loop = async () => {
    while (!stopping) {
      try {
        messages = await consumer.consume({ max_messages: concurrency * 2 });
        for await (const m of messages) {
          if (stopping) {
            m.nak();
            continue;
          }
          if (opts.skip?.(m)) {
            const n = skipped.push(m);
            if (n >= SKIP_ACK_BATCH) ackSkipped();
            else if (n === 1) skipTimer = setTimeout(ackSkipped, SKIP_ACK_LINGER_MS);
            continue;
          }
          while (inFlight >= concurrency) await new Promise<void>((r) => (slot = r));
          void work(m);
        }
      } catch (err) {
        if (stopping) break;
        log.warn({ err, durable: opts.durable }, 'consumer loop failed; restarting');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  };
  void loop();
  const untrack = trackConsumerPending(opts.stream, opts.durable, async () => (await consumer.info()).num_pending);

  return {
    async stop(graceMs = 20_000) {
      stopping = true;
      untrack();
      ackSkipped();
      try {
        messages?.stop();
      } catch {
        /* already closed */
      }
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((r) => (idle = r)),
          new Promise<void>((r) => setTimeout(r, graceMs).unref()),
        ]);
      }
      // Out of time: whatever is still being worked goes back to the stream now (another replica takes it) rather
      // than after ack_wait; its handler's late result is never acknowledged.
      for (const m of working) {
        handedBack.add(m);
        try {
          m.nak();
        } catch {
          /* connection gone: redelivered after ack_wait */
        }
      }
    },
  };
}

function describeInvalid(err: unknown): string {
  const issues = (err as { issues?: Array<{ path: PropertyKey[]; message: string }> }).issues;
  if (issues)
    return issues
      .slice(0, 5)
      .map((i) => `/${i.path.map(String).join('/')}: ${i.message}`)
      .join('; ');
  return (err as Error)?.message ?? String(err);
}

/** Decodes an event envelope from a message, validating its payload against the event's schema. */
export function parseEvent<T>(def: EventDef<z.ZodType<T>>, raw: unknown): EventEnvelope<T> {
  const env = raw as EventEnvelope<unknown>;
  return { ...env, data: def.payload.parse(env.data) };
}
