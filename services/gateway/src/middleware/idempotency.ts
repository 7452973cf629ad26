import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Request } from 'express';
import type { ChainableCommander, Redis } from 'ioredis';
import {
  acceptsIdempotencyKey,
  type AnyOperation,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_TTL_SECONDS,
  type Principal,
  type ProjectScope,
} from '@platform/contracts';
import type { WireReply } from '@platform/bus';
import { AppError, tryAgainShortly } from '@platform/problems';
import { getLogger } from '@platform/logger';
import { projectOf } from './erasing-projects';
import type { Claim, IdempotencyClaims } from './idempotency-claims';

const log = getLogger('gateway.idempotency');

/**
 * `Idempotency-Key` on creates (IETF httpapi draft): the first answer to a key is kept for 24 hours per tenant; the
 * same key with the same request answers it again (with `Idempotent-Replayed: true`) without calling the service,
 * with another request 422, and while the first is still being served 409.
 *
 * Two stores. The claim of a key (which request holds it, in flight or answered) is in a JetStream key-value bucket
 * (idempotency-claims.ts): written once per key with JetStream's compare-and-set, so all replicas agree, and kept on
 * disk, so a key stays used when Redis loses its data; a create is never sent twice for one key. The answer is in
 * Redis, which every gateway replica already shares for the rate limits, with Redis's own 24 h expiry (no clean-up
 * job). A key whose request was served but whose answer Redis no longer has (Redis restarted empty) answers 409:
 * served, answer not kept. The gateway owns no database, and the services' collections know nothing of HTTP answers.
 * Nothing readable is stored: names are SHA-256s of tenant and key, and the answer (which can hold a secret shown
 * once, such as a new API key) is encrypted with AES-256-GCM under a key derived from the Idempotency-Key, which only
 * the caller knows. When Redis or the bucket cannot be reached a request with a key gets 503 (the promise of one
 * execution cannot be kept); requests without a key touch neither.
 *
 * Erasure (docs/operating.md, "Erasure"): the answers of a project's requests are listed in the project's index, a
 * sorted set `<prefix>index:<tenant>:<project>` whose members are the answers' key hashes (with `|<hash of the
 * conversation id>` once more for each conversation the request named), scored by when they expire. The gateway
 * takes part in every erasure job (ERASURE stream) and deletes what the index lists: all of a project's answers, or
 * those that named the conversation, and frees their keys' claims (the same key then runs its request again). An
 * answer that comes back while its project is being erased is not stored.
 */
export interface Idempotency {
  /** The request's key, when the operation takes one and the header is there (400 for a malformed key). */
  keyOf(op: AnyOperation, req: Request): string | undefined;
  /** Calls `send` at most once per key (see above); without a key just calls it. */
  run(
    op: AnyOperation,
    req: Request,
    principal: Principal,
    key: string | undefined,
    send: () => Promise<WireReply>,
  ): Promise<WireReply>;
  /** Deletes every stored answer of the project's requests, and its index (safe to repeat). */
  eraseProject(scope: ProjectScope): Promise<number>;
  /** Deletes the stored answers of the project's requests that named the conversation (safe to repeat). */
  eraseConversation(scope: ProjectScope, conversationId: string): Promise<number>;
}

export interface IdempotencyOptions {
  /** How long a key stays "in flight" if its gateway dies before the answer (the request deadline plus a margin). */
  inFlightSeconds: number;
  keyPrefix?: string;
  /** Whether the project is being erased now: an answer that comes back meanwhile is not stored. */
  isErasing?(scope: ProjectScope): boolean;
}

/** An answer as Redis keeps it (sealed). */
type Entry = { fingerprint: string; reply: string };

const sha256 = (...parts: string[]) => createHash('sha256').update(parts.join('\u0000')).digest();

/** JSON with object keys sorted, so the same body in another key order is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function tenantOf(principal: Principal, req: Request): string {
  if ('tenantId' in principal) return principal.tenantId;
  return typeof req.params.tenantId === 'string' ? req.params.tenantId : '-';
}

/** Who sent it: a key replays only to the caller that used it first (another caller with the key gets 422). */
function callerOf(principal: Principal): string {
  switch (principal.kind) {
    case 'user':
      return `user:${principal.userId}`;
    case 'run':
      return `run:${principal.apiKeyId ?? principal.appId ?? ''}:${principal.subject ?? ''}`;
    case 'analytics':
      return `analytics:${principal.keyId}`;
    default:
      return principal.kind;
  }
}

/** The conversations a request names: `conversationId` of its body, or of each item of a batch (`events`). */
function conversationIdsOf(body: unknown): string[] {
  const of = (x: unknown) => {
    const id = (x as { conversationId?: unknown } | null | undefined)?.conversationId;
    return typeof id === 'string' && id !== '' ? [id] : [];
  };
  const events = (body as { events?: unknown } | null | undefined)?.events;
  return [...new Set([...of(body), ...(Array.isArray(events) ? events.flatMap(of) : [])])];
}

/** The index member suffix of a conversation (its id is the caller's text: only a hash of it is stored). */
const conversationTag = (conversationId: string) => sha256('conversation', conversationId).toString('hex').slice(0, 32);

/** Index entries read per ZSCAN step (members are hex and `|`, so a member pattern needs no escaping). */
const ZSCAN_COUNT = 500;

function seal(secret: Buffer, reply: WireReply): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', secret, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(reply), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
}

function open(secret: Buffer, sealed: string): WireReply {
  const raw = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', secret, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as WireReply;
}

const unavailable = () =>
  tryAgainShortly('Requests with an Idempotency-Key cannot be served right now; try again shortly');

export function idempotency(redis: Redis, claims: IdempotencyClaims, opts: IdempotencyOptions): Idempotency {
  const prefix = opts.keyPrefix ?? 'idem:';
  const inFlightMs = opts.inFlightSeconds * 1000;
  const ttlMs = IDEMPOTENCY_KEY_TTL_SECONDS * 1000;

  const read = async (redisKey: string): Promise<Entry | null> => {
    const raw = await redis.get(redisKey);
    return raw ? (JSON.parse(raw) as Entry) : null;
  };
  const indexOf = (scope: ProjectScope) => `${prefix}index:${scope.tenantId}:${scope.projectId}`;

  /**
   * Lists an answer in its project's index until `expiresAt`, drops the members that expired before now, and keeps the
   * index as long as the longest-lived answer can be (so an idle project's index goes away on its own).
   */
  const listInIndex = (tx: ChainableCommander, scope: ProjectScope, members: string[], expiresAt: number) => {
    const index = indexOf(scope);
    return tx
      .zadd(index, ...members.flatMap((m) => [expiresAt, m]))
      .zremrangebyscore(index, '-inf', Date.now())
      .pexpire(index, ttlMs + inFlightMs);
  };

  /** Deletes the answers whose index members match `pattern`, then those members; answers how many answers. */
  const eraseMatching = async (scope: ProjectScope, pattern: string | undefined): Promise<number> => {
    const index = indexOf(scope);
    let cursor = '0';
    let erased = 0;
    do {
      const [next, flat] = pattern
        ? await redis.zscan(index, cursor, 'MATCH', pattern, 'COUNT', ZSCAN_COUNT)
        : await redis.zscan(index, cursor, 'COUNT', ZSCAN_COUNT);
      const members = flat.filter((_, i) => i % 2 === 0);
      const hashes = [...new Set(members.map((m) => m.split('|', 1)[0]!))];
      if (hashes.length) erased += await redis.del(...hashes.map((h) => prefix + h));
      // Their keys are free again too: the same key runs its request again (a claim holds no data of the request).
      await Promise.all(hashes.map((h) => claims.release(h)));
      if (pattern && members.length) await redis.zrem(index, ...members);
      cursor = next;
    } while (cursor !== '0');
    if (!pattern) await redis.del(index);
    return erased;
  };

  return {
    keyOf(op, req) {
      const value = req.headers[IDEMPOTENCY_KEY_HEADER];
      if (value === undefined || !acceptsIdempotencyKey(op)) return undefined;
      if (typeof value !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(value)) {
        const detail = 'must be 1 to 255 visible ASCII characters (a UUID, for example)';
        throw new AppError('bad_request', `The Idempotency-Key header ${detail}`, {
          errors: [{ pointer: '/headers/idempotency-key', detail }],
        });
      }
      return value;
    },

    eraseProject: (scope) => eraseMatching(scope, undefined),
    eraseConversation: (scope, conversationId) => eraseMatching(scope, `*|${conversationTag(conversationId)}`),

    async run(op, req, principal, key, send) {
      if (key === undefined) return send();
      const tenant = tenantOf(principal, req);
      const keyHash = sha256('key', tenant, key).toString('hex');
      const redisKey = prefix + keyHash;
      const project = projectOf(principal, req.params);
      const members = project
        ? [keyHash, ...conversationIdsOf(req.body).map((c) => `${keyHash}|${conversationTag(c)}`)]
        : [];
      const secret = sha256('seal', tenant, key);
      const fingerprint = sha256(
        callerOf(principal),
        op.operationId,
        canonical(req.params),
        canonical(req.query),
        canonical(req.body),
      ).toString('base64');
      const release = () =>
        claims
          .release(keyHash)
          .catch((err: unknown) =>
            log.warn({ err: (err as Error).message }, 'could not release an idempotency claim; it runs out on its own'),
          );

      let held: Claim | null;
      try {
        held = await claims.claim(keyHash, fingerprint, inFlightMs);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'idempotency claims unreachable');
        throw unavailable();
      }
      if (held) {
        if (held.fingerprint !== fingerprint) {
          throw new AppError(
            'unprocessable_entity',
            'This Idempotency-Key was already used for a different request; use a new key for a new request',
          );
        }
        if (held.state === 'in-flight') {
          throw new AppError(
            'conflict',
            'A request with this Idempotency-Key is still being processed; retry after it has been answered',
            { headers: { 'retry-after': '1' } },
          );
        }
        let entry: Entry | null;
        try {
          entry = await read(redisKey);
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'idempotency store unreachable');
          throw unavailable();
        }
        // Served, but its answer is gone (Redis lost it, or an erasure removed it): never sent again, never replayed.
        if (!entry)
          throw new AppError(
            'conflict',
            'The request with this Idempotency-Key was already served and its answer is no longer kept; read the result back, or use a new key for a new request',
          );
        const stored = open(secret, entry.reply);
        return { ...stored, headers: { ...stored.headers, 'idempotent-replayed': 'true' } };
      }

      try {
        // Listed in its project's index before it is sent (an erasure must find its answer); Redis away: 503.
        await (project ? listInIndex(redis.multi(), project, members, Date.now() + inFlightMs).exec() : redis.ping());
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'idempotency store unreachable');
        await release();
        throw unavailable();
      }

      let reply: WireReply;
      try {
        reply = await send();
      } catch (err) {
        // No answer from the service (503/504): the key is free again, so the client can retry with it.
        await release();
        throw err;
      }
      // A 5xx is not kept (the key is free again), nor an answer that comes back while its project is being erased
      // (the erasure may have run already).
      if ((!reply.ok && reply.problem.status >= 500) || (project && opts.isErasing?.(project))) {
        await release();
        return reply;
      }
      try {
        // The answer and its listing in one transaction: an answer is never kept without the index knowing it.
        const tx = redis
          .multi()
          .set(redisKey, JSON.stringify({ fingerprint, reply: seal(secret, reply) } satisfies Entry), 'PX', ttlMs);
        await (project ? listInIndex(tx, project, members, Date.now() + ttlMs) : tx).exec();
      } catch (err) {
        // The answer still goes out; a repeat is answered 409 (served, answer not kept).
        log.warn({ err: (err as Error).message }, 'could not store the answer of an idempotent request');
      }
      try {
        await claims.done(keyHash, fingerprint);
      } catch (err) {
        // The claim stays in flight until it runs out (inFlightSeconds); a repeat after that would be sent again.
        log.warn({ err: (err as Error).message }, 'could not mark an idempotency claim answered');
      }
      return reply;
    },
  };
}
