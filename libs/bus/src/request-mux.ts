import { createInbox, ErrorCode, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from 'nats';
import { headersOf } from './codec';
import { BATCH_HEADER, type FramePart, framedSize, readFrame, writeFrame } from './frame';
import { SIGNATURE_HEADER, signRequest } from './signature';
import { inboxPrefixOf } from './connection';

/** What a request is answered with: the reply's payload and headers. */
export interface Answer {
  data: Uint8Array;
  headers?: Pick<MsgHdrs, 'get'>;
}

/**
 * A request between the platform's processes: its payload (JSON text), its headers, the key it is signed with (a
 * public operation: signature.ts) and the service that answers it (its replies come to an inbox of that service's
 * own, the only one of this identity's inboxes that service may publish to).
 */
export interface BusRequest {
  text: string;
  headers: Record<string, string>;
  signWith?: Buffer;
  owner?: string;
}

interface Pending {
  resolve(msg: Answer): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
  timeout: number;
}

/** The entry of `key`, taken out of `map` with its timer stopped; undefined when it is not there (any more). */
function takeTimed<T extends { timer: NodeJS.Timeout }>(map: Map<string, T>, key: string): T | undefined {
  const entry = map.get(key);
  if (!entry) return undefined;
  map.delete(key);
  clearTimeout(entry.timer);
  return entry;
}

/** The error of a reply that is a NATS status (503: no responders). */
function statusError(h: MsgHdrs): Error {
  return h.code === 503
    ? natsError('503', 'no responders')
    : natsError(String(h.code), h.description || `request failed with status ${h.code}`);
}

/** An error with the nats.js code the callers classify (`natsErrorToAppError`, `undeliveredFromNats`). */
export function natsError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * Request/reply over wildcard inbox subscriptions: each request publishes with the reply subject `<inbox>.<n>` and
 * waits for that token. The same protocol as nats.js's own `request`, without its per-request costs on the success
 * path (it builds a `NatsError` with a stack trace for every answered request, and races two promises). A reply that is
 * NATS's "no responders" status (503) rejects with code `503`, a request not answered in time with `TIMEOUT`, and every
 * request still waiting when the connection closes with `CONNECTION_CLOSED`.
 *
 * The requests of one turn of the event loop leave together, and the platform's own requests (`send`) to one subject
 * travel as one message, a batch (frame.ts): the service serves each as if it had come alone and answers them in one
 * message, or each on its own reply subject when together they would not fit. A service of the release before, which
 * takes one request per message, answers a batch with something that is not a frame: its requests are then sent again
 * one by one, and that subject's requests go alone for a while.
 */
export class RequestMux {
  private readonly pending = new Map<string, Pending>();
  /** Inboxes by the service that answers there ('' for requests to NATS itself). */
  private readonly inboxes = new Map<string, string>();
  private readonly subs: Subscription[] = [];
  private closing = false;
  private next = 0;
  private queued: Queued[] = [];
  private scheduled = false;
  /** Batches waiting for their answer, by reply token. */
  private readonly batches = new Map<string, Batch>();
  /** Subjects whose service answered a batch as a single request (the release before), until when to send alone. */
  private readonly refused = new Map<string, number>();

  constructor(private readonly nc: NatsConnection) {}

  /** One message, sent as it is (the JetStream API, a probe). */
  request(subject: string, data: Uint8Array, opts: { timeout: number; headers?: MsgHdrs }): Promise<Answer> {
    return this.enqueue(opts.timeout, '', (token, reply) => ({ token, subject, data, reply, headers: opts.headers }));
  }

  /** A request of the platform's own: it leaves in one batch with this turn's other requests to `subject`, or alone. */
  send(subject: string, request: BusRequest, opts: { timeout: number }): Promise<Answer> {
    return this.enqueue(opts.timeout, request.owner ?? '', (token, reply) => ({ token, subject, reply, request }));
  }

  private enqueue(timeout: number, owner: string, queued: (token: string, reply: string) => Queued): Promise<Answer> {
    const inbox = this.inboxOf(owner);
    const token = (this.next++).toString(36);
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => this.settle(token)?.reject(natsError(ErrorCode.Timeout, 'TIMEOUT')), timeout);
      this.pending.set(token, { resolve, reject, timer, timeout });
      this.queued.push(queued(token, `${inbox}.${token}`));
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.publishQueued);
      }
    });
  }

  /**
   * The requests of one turn of the event loop leave together, after its I/O callbacks: nats.js writes its buffer to
   * the socket once per microtask checkpoint, and Node runs one between the callbacks of two HTTP requests, so a
   * request published at once cost nats.js, nats-server and the service one socket write each.
   */
  private readonly publishQueued = () => {
    this.scheduled = false;
    const turn = this.queued;
    this.queued = [];
    let bySubject: Map<string, Queued[]> | undefined;
    for (const q of turn) {
      // Timed out, or failed with the connection, before it left.
      if (!this.pending.has(q.token)) continue;
      if (!q.request) {
        this.publishOne(q);
        continue;
      }
      bySubject ??= new Map();
      const same = bySubject.get(q.subject);
      if (same) same.push(q);
      else bySubject.set(q.subject, [q]);
    }
    if (bySubject) for (const [subject, items] of bySubject) this.publishTogether(subject, items);
  };

  private publishOne(q: Queued): void {
    try {
      if (q.request) {
        const { text, headers, signWith } = q.request;
        const signed = signWith ? { ...headers, [SIGNATURE_HEADER]: signRequest(signWith, q.subject, text) } : headers;
        this.nc.publish(q.subject, encoder.encode(text), { reply: q.reply, headers: headersOf(signed) });
      } else {
        this.nc.publish(q.subject, q.data!, { reply: q.reply, headers: q.headers });
      }
    } catch (err) {
      this.settle(q.token)?.reject(err as Error);
    }
  }

  /**
   * This turn's requests to one subject, in batches of at most half the server's largest payload (a request larger
   * than that leaves alone, as it would have) and `MAX_BATCH` requests.
   */
  private publishTogether(subject: string, queued: Queued[]): void {
    if (queued.length === 1 || !this.mayBatch(subject)) {
      for (const q of queued) this.publishOne(q);
      return;
    }
    const limit = Math.floor((this.nc.info?.max_payload ?? 1024 * 1024) / 2);
    let items: Queued[] = [];
    let bytes = 0;
    const send = () => {
      if (items.length === 1) this.publishOne(items[0]!);
      else if (items.length > 1) this.publishBatch(subject, items);
      items = [];
      bytes = 0;
    };
    for (const q of queued) {
      const size = framedSize(partOf(q));
      if (size > limit) {
        this.publishOne(q);
        continue;
      }
      if (bytes + size > limit || items.length === MAX_BATCH) send();
      items.push(q);
      bytes += size;
    }
    send();
  }

  private mayBatch(subject: string): boolean {
    const until = this.refused.get(subject);
    if (until === undefined) return true;
    if (Date.now() < until) return false;
    this.refused.delete(subject);
    return true;
  }

  /** One batch; signed (once, over the whole frame) with the key its requests are signed with. */
  private publishBatch(subject: string, items: Queued[]): void {
    const first = items[0]!.request!;
    // Upper case: a single request's token is base 36 in lower case.
    const token = `C${(this.next++).toString(36)}`;
    // Kept until answered, or as long as its longest-waiting request (each request has its own timer as well).
    const timer = setTimeout(
      () => this.batches.delete(token),
      Math.max(...items.map((q) => this.pending.get(q.token)?.timeout ?? 0)),
    );
    this.batches.set(token, { subject, items, timer });
    try {
      const frame = writeFrame(items.map(partOf));
      const headers = headersOf({
        [BATCH_HEADER]: String(items.length),
        [SIGNATURE_HEADER]: first.signWith && signRequest(first.signWith, subject, frame),
      });
      this.nc.publish(subject, frame, { reply: `${this.inboxOf(first.owner ?? '')}.${token}`, headers });
    } catch (err) {
      this.endBatch(token);
      for (const q of items) this.settle(q.token)?.reject(err as Error);
    }
  }

  /**
   * The answer to a batch: a frame with each request's reply, in the requests' order. A NATS status (no responders)
   * fails each request as it would have failed alone. Anything else is the answer of a service that takes one request
   * per message: the requests are sent again one by one, and the subject's requests go alone for a while.
   */
  private answerBatch(batch: Batch, msg: Msg): void {
    const h = msg.headers;
    const waiting = batch.items.filter((q) => this.pending.has(q.token));
    if (h?.hasError) {
      for (const q of waiting) this.settle(q.token)?.reject(statusError(h));
      return;
    }
    if (!h?.get(BATCH_HEADER)) {
      this.refused.set(batch.subject, Date.now() + REFUSED_MS);
      for (const q of waiting) this.publishOne(q);
      return;
    }
    const replies = readFrame(msg.data);
    batch.items.forEach((q, i) => {
      const answer = replies?.[i];
      const p = this.settle(q.token);
      if (!p) return;
      if (answer) p.resolve(answer);
      else
        p.reject(
          new Error(
            `the answer to a batch on ${batch.subject} has no reply for request ${i + 1} of ${batch.items.length}`,
          ),
        );
    });
  }

  /** Takes a waiting request out (its timer stopped); undefined when it is no longer waiting. */
  private settle(token: string): Pending | undefined {
    return takeTimed(this.pending, token);
  }

  /** Takes a batch that waits for its answer out (its timer stopped). */
  private endBatch(token: string): Batch | undefined {
    return takeTimed(this.batches, token);
  }

  /** The inbox the replies of `owner`'s service come to (one wildcard subscription each, made when first needed). */
  private inboxOf(owner: string): string {
    const known = this.inboxes.get(owner);
    if (known) return known;
    const prefix = inboxPrefixOf(this.nc);
    const inbox = createInbox(owner && prefix ? `${prefix}.${owner}` : prefix);
    this.subs.push(
      this.nc.subscribe(`${inbox}.*`, { callback: (err, msg) => (err ? this.failAll(err) : this.answer(inbox, msg)) }),
    );
    this.inboxes.set(owner, inbox);
    if (!this.closing) {
      this.closing = true;
      void this.nc.closed().then(() => this.failAll(natsError(ErrorCode.ConnectionClosed, 'CONNECTION_CLOSED')));
    }
    return inbox;
  }

  private answer(inbox: string, msg: Msg): void {
    const token = msg.subject.slice(inbox.length + 1);
    if (token.startsWith('C')) {
      const batch = this.endBatch(token);
      if (batch) this.answerBatch(batch, msg);
      return;
    }
    const p = this.settle(token);
    if (!p) return; // answered after its timeout, or a second answer
    const h = msg.headers;
    if (h?.hasError) {
      p.reject(statusError(h));
      return;
    }
    p.resolve(msg);
  }

  /** Fails every request still waiting for its answer (and every batch) with `err`. */
  failWaiting(err: Error): void {
    this.failAll(err);
  }

  private failAll(err: Error): void {
    for (const token of [...this.batches.keys()]) this.endBatch(token);
    for (const token of [...this.pending.keys()]) this.settle(token)?.reject(err);
  }

  /** The inbox subscriptions (for tests and shutdown). */
  get subscriptions(): readonly Subscription[] {
    return this.subs;
  }
}

interface Queued {
  token: string;
  subject: string;
  reply: string;
  /** A message sent as it is. */
  data?: Uint8Array;
  headers?: MsgHdrs;
  /** A request of the platform's own (may leave in a batch). */
  request?: BusRequest;
}

interface Batch {
  subject: string;
  items: Queued[];
  timer: NodeJS.Timeout;
}

/** A request's part of a batch: its headers, its own reply subject and its payload. */
const partOf = (q: Queued): FramePart => ({ headers: q.request!.headers, reply: q.reply, text: q.request!.text });

const encoder = new TextEncoder();
/** How long a subject whose service answered a batch as a single request is sent one request at a time. */
const REFUSED_MS = 5_000;
/** Requests in one batch at most. */
const MAX_BATCH = 500;
