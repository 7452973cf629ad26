import { createInbox, ErrorCode, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from 'nats';
import { coalescedSubject } from '@platform/contracts';
import { headersOf, RawJson } from './codec';
import { SIGNATURE_HEADER, signRequest } from './signature';
import { inboxPrefixOf } from './connection';

/** What a request is answered with: the reply's payload and headers. */
export interface Answer {
  data: Uint8Array;
  headers?: Pick<MsgHdrs, 'get'>;
}

/** The headers of one reply of a coalesced answer (read with `get`, as a message's are; "" when absent). */
class ReplyHeaders {
  constructor(private readonly values: Record<string, string>) {}
  get(name: string): string {
    return this.values[name] ?? '';
  }
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
  return h.code === 503 ? natsError('503', 'no responders') : natsError(String(h.code), h.description || `request failed with status ${h.code}`);
}

/** An error with the nats.js code the callers classify (`natsErrorToAppError`, `undeliveredFromNats`). */
function natsError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * Request/reply over one wildcard inbox subscription per connection: each request publishes with the reply subject
 * `<inbox>.<n>` and waits for that token. The same protocol as nats.js's own `request`, without its per-request costs
 * on the success path (it builds a `NatsError` with a stack trace for every answered request, and races two
 * promises): on the gateway that was 3–4 % of its CPU. A reply that is NATS's "no responders" status (503) rejects
 * with code `503`, a request not answered in time with `TIMEOUT`, and every request still waiting when the
 * connection closes with `CONNECTION_CLOSED`.
 */
export class RequestMux {
  private readonly pending = new Map<string, Pending>();
  private inbox?: string;
  private sub?: Subscription;
  private next = 0;
  private queued: Queued[] = [];
  private scheduled = false;
  /** Coalesced messages waiting for their answer, by reply token. */
  private readonly batches = new Map<string, Batch>();
  /** Subjects whose coalesced form nobody serves (a service of an older release), until when not to try it again. */
  private readonly refused = new Map<string, number>();

  constructor(private readonly nc: NatsConnection) {}

  request(subject: string, data: Uint8Array, opts: { timeout: number; headers?: MsgHdrs }): Promise<Answer> {
    return this.enqueue(opts.timeout, (token, reply) => ({ token, subject, data, reply, headers: opts.headers }));
  }

  /**
   * A request that may leave in one message with the other requests of this turn to the same subject: they are sent
   * as one JSON array on `<subject>.coalesced` (see `coalescedSubject`), and the service answers them in one message
   * (`frameCoalescedReply`). Each request keeps its own timeout and answer. Used where the service serves the
   * coalesced subject too; while nobody does (an older release), the requests are sent one by one.
   */
  requestCoalesced(subject: string, item: CoalescibleItem, opts: { timeout: number }): Promise<Answer> {
    return this.enqueue(opts.timeout, (token, reply) => ({ token, subject, reply, item }));
  }

  private enqueue(timeout: number, queued: (token: string, reply: string) => Queued): Promise<Answer> {
    const inbox = this.open();
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
    const batch = this.queued;
    this.queued = [];
    let coalesced: Map<string, Queued[]> | undefined;
    for (const q of batch) {
      // Timed out, or failed with the connection, before it left.
      if (!this.pending.has(q.token)) continue;
      if (q.item && this.mayCoalesce(q.subject)) {
        coalesced ??= new Map();
        const same = coalesced.get(q.subject);
        if (same) same.push(q);
        else coalesced.set(q.subject, [q]);
      } else {
        this.publishOne(q);
      }
    }
    if (coalesced) for (const [subject, items] of coalesced) this.publishCoalesced(subject, items);
  };

  private mayCoalesce(subject: string): boolean {
    const until = this.refused.get(subject);
    if (until === undefined) return true;
    if (Date.now() < until) return false;
    this.refused.delete(subject);
    return true;
  }

  private publishOne(q: Queued): void {
    try {
      if (q.item) {
        const { body, headers, signWith } = q.item;
        const text = body instanceof RawJson ? body.text : JSON.stringify(body);
        const signed = signWith ? { ...headers, [SIGNATURE_HEADER]: signRequest(signWith, q.subject, text) } : headers;
        this.nc.publish(q.subject, encoder.encode(text), { reply: q.reply, headers: headersOf(signed) });
      }
      else this.nc.publish(q.subject, q.data!, { reply: q.reply, headers: q.headers });
    } catch (err) {
      this.settle(q.token)?.reject(err as Error);
    }
  }

  /**
   * The coalesced requests of one subject, in messages of at most half the server's largest payload (a request larger
   * than that leaves alone, as it would have).
   */
  private publishCoalesced(subject: string, queued: Queued[]): void {
    if (queued.length === 1) {
      this.publishOne(queued[0]!);
      return;
    }
    const limit = Math.floor((this.nc.info?.max_payload ?? 1024 * 1024) / 2);
    let chunk: string[] = [];
    let items: Queued[] = [];
    let bytes = 2;
    const send = () => {
      if (items.length === 1) this.publishOne(items[0]!);
      else if (items.length > 1) this.publishBatch(subject, items, `[${chunk.join(',')}]`, items[0]!.item!.signWith);
      chunk = [];
      items = [];
      bytes = 2;
    };
    for (const q of queued) {
      let part: string;
      try {
        const body = q.item!.body;
        // A body already in JSON (RawJson) is placed as it is.
        part = `{"r":${JSON.stringify(q.reply)},"h":${JSON.stringify(q.item!.headers)},"d":${body instanceof RawJson ? body.text : JSON.stringify(body)}}`;
      } catch (err) {
        // A body JSON cannot hold fails its own request (as `encode` would have), not the others' or the process.
        this.settle(q.token)?.reject(err as Error);
        continue;
      }
      const size = Buffer.byteLength(part) + 1;
      if (size > limit) {
        this.publishOne(q);
        continue;
      }
      if (bytes + size > limit) send();
      chunk.push(part);
      items.push(q);
      bytes += size;
    }
    send();
  }

  /** One coalesced message; signed (once, over the whole message) with the key its requests are signed with. */
  private publishBatch(subject: string, items: Queued[], payload: string, signWith: Buffer | undefined): void {
    const inbox = this.open();
    // Upper case: a single request's token is base 36 in lower case.
    const token = `C${(this.next++).toString(36)}`;
    // Kept until answered, or as long as its longest-waiting request (each request has its own timer as well).
    const timer = setTimeout(() => this.batches.delete(token), Math.max(...items.map((q) => this.pending.get(q.token)?.timeout ?? 0)));
    this.batches.set(token, { subject, items, timer });
    try {
      const headers = signWith ? headersOf({ [SIGNATURE_HEADER]: signRequest(signWith, subject, payload) }) : undefined;
      this.nc.publish(coalescedSubject(subject), encoder.encode(payload), { reply: `${inbox}.${token}`, headers });
    } catch (err) {
      this.endBatch(token);
      for (const q of items) this.settle(q.token)?.reject(err as Error);
    }
  }

  /**
   * The answer to a coalesced message: each request's reply, framed by `frameCoalescedReply`. "No responders" means no
   * service serves the coalesced form yet: its requests are sent again one by one, and the subject's requests go one by
   * one for a while. (A service that answers its requests one by one sends nothing here.)
   */
  private answerBatch(batch: Batch, msg: Msg): void {
    const h = msg.headers;
    if (h?.hasError) {
      if (h.code === 503) this.refused.set(batch.subject, Date.now() + REFUSED_MS);
      for (const q of batch.items) {
        if (!this.pending.has(q.token)) continue;
        if (h.code === 503) this.publishOne(q);
        else this.settle(q.token)?.reject(statusError(h));
      }
      return;
    }
    const replies = readCoalescedReply(msg.data);
    batch.items.forEach((q, i) => {
      const answer = replies?.[i];
      const p = this.settle(q.token);
      if (!p) return;
      if (answer) p.resolve(answer);
      else p.reject(new Error(`the coalesced answer on ${batch.subject} has no reply for request ${i + 1} of ${batch.items.length}`));
    });
  }

  /** Takes a waiting request out (its timer stopped); undefined when it is no longer waiting. */
  private settle(token: string): Pending | undefined {
    return takeTimed(this.pending, token);
  }

  /** Takes a coalesced message that waits for its answer out (its timer stopped). */
  private endBatch(token: string): Batch | undefined {
    return takeTimed(this.batches, token);
  }

  private open(): string {
    if (this.inbox) return this.inbox;
    const inbox = createInbox(inboxPrefixOf(this.nc));
    this.sub = this.nc.subscribe(`${inbox}.*`, { callback: (err, msg) => (err ? this.failAll(err) : this.answer(inbox, msg)) });
    this.inbox = inbox;
    void this.nc.closed().then(() => this.failAll(natsError(ErrorCode.ConnectionClosed, 'CONNECTION_CLOSED')));
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

  private failAll(err: Error): void {
    for (const token of [...this.batches.keys()]) this.endBatch(token);
    for (const token of [...this.pending.keys()]) this.settle(token)?.reject(err);
  }

  /** The inbox subscription (for tests and shutdown). */
  get subscription(): Subscription | undefined {
    return this.sub;
  }
}

interface Queued {
  token: string;
  subject: string;
  reply: string;
  /** A request sent as it is. */
  data?: Uint8Array;
  headers?: MsgHdrs;
  /** A request that may be coalesced: its body and headers, encoded when it leaves. */
  item?: CoalescibleItem;
}

/**
 * A request that may leave with others: its body, its headers and the key it is signed with (signature.ts), if any.
 * Alone it is signed over its own payload; in a coalesced message the message is signed once, over all of it.
 */
export interface CoalescibleItem {
  body: unknown;
  headers: Record<string, string>;
  signWith?: Buffer;
}

interface Batch {
  subject: string;
  items: Queued[];
  timer: NodeJS.Timeout;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** How long a subject whose coalesced form had no responders is sent one request at a time. */
const REFUSED_MS = 5_000;

/** One request of a coalesced message: the reply subject it would have had alone, its headers and its body. */
export interface CoalescedRequest {
  r: string;
  h: Record<string, string>;
  d: unknown;
}

/**
 * The answer to a coalesced message: a line of JSON with each reply's headers and payload length, in the requests'
 * order, then the payloads one after another (each exactly what the reply alone would have carried).
 */
export function frameCoalescedReply(replies: Array<{ headers?: Record<string, string>; text: string }>): Uint8Array {
  const meta = replies.map((r) => {
    const n = Buffer.byteLength(r.text);
    return r.headers ? { h: r.headers, n } : { n };
  });
  // One encoding of the whole frame: the payloads are text (JSON) already.
  return encoder.encode(`${JSON.stringify(meta)}\n${replies.map((r) => r.text).join('')}`);
}

/** The replies of `frameCoalescedReply`; undefined when the payload is not such a frame. */
export function readCoalescedReply(data: Uint8Array): Answer[] | undefined {
  const end = data.indexOf(0x0a);
  if (end < 0) return undefined;
  let meta: Array<{ h?: Record<string, string>; n: number }>;
  try {
    meta = JSON.parse(decoder.decode(data.subarray(0, end))) as typeof meta;
  } catch {
    return undefined;
  }
  if (!Array.isArray(meta)) return undefined;
  let at = end + 1;
  const out: Answer[] = [];
  for (const m of meta) {
    const n = typeof m?.n === 'number' && m.n >= 0 ? m.n : -1;
    if (n < 0 || at + n > data.length) return undefined;
    out.push({ data: data.subarray(at, at + n), headers: m.h ? new ReplyHeaders(m.h) : undefined });
    at += n;
  }
  return out;
}
