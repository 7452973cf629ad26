import type { KV, NatsConnection } from 'nats';
import { retryTransient } from '@platform/bus';
import {
  IDEMPOTENCY_CLAIMS_BUCKET,
  IDEMPOTENCY_KEY_TTL_SECONDS,
  idempotencyClaimsStreamDef,
} from '@platform/contracts';

/** Who holds an Idempotency-Key: a request still in flight (until `until`, epoch ms), or one that was answered. */
export type Claim = { state: 'in-flight'; fingerprint: string; until: number } | { state: 'done'; fingerprint: string };

/**
 * The durable half of `Idempotency-Key` (idempotency.ts): which keys were claimed, by which request (its fingerprint),
 * and whether it was answered, in a JetStream key-value bucket. JetStream keeps it on disk (replicated on a cluster),
 * so a key whose answer Redis lost (Redis restarted empty) is still known as used, and its create is never sent twice.
 * An entry holds no part of the request or answer: the entry's name is a SHA-256 of tenant and key, the fingerprint a
 * SHA-256 of caller, operation and body.
 */
export interface IdempotencyClaims {
  /** Claims `id` for a request for `inFlightMs`: null when this request holds it now, else the claim that holds it. */
  claim(id: string, fingerprint: string, inFlightMs: number): Promise<Claim | null>;
  /** The request holding `id` was answered: the key stays used for the answer's lifetime (24 h). */
  done(id: string, fingerprint: string): Promise<void>;
  /** The request holding `id` got no answer (or a 5xx): the key is free again. */
  release(id: string): Promise<void>;
}

const encode = (claim: Claim) => JSON.stringify(claim);
/** JetStream's "wrong last sequence": the entry was written by someone else meanwhile. */
const lostRace = (err: unknown) => (err as { api_error?: { err_code?: number } })?.api_error?.err_code === 10071;

export async function idempotencyClaims(nc: NatsConnection, replicas: number): Promise<IdempotencyClaims> {
  const kv: KV = await retryTransient(() =>
    nc.jetstream().views.kv(IDEMPOTENCY_CLAIMS_BUCKET, {
      history: 1,
      ttl: idempotencyClaimsStreamDef.maxAgeMs ?? IDEMPOTENCY_KEY_TTL_SECONDS * 1000,
      replicas,
    }),
  );
  return {
    async claim(id, fingerprint, inFlightMs) {
      const mine: Claim = { state: 'in-flight', fingerprint, until: Date.now() + inFlightMs };
      /** Writes our claim where the entry is at `revision` (0: where there is none); false when another came first. */
      const write = async (revision: number) => {
        try {
          await (revision ? kv.update(id, encode(mine), revision) : kv.create(id, encode(mine)));
          return true;
        } catch (err) {
          if (!lostRace(err)) throw err;
          return false;
        }
      };
      // Two tries: an entry can be released or run out between our create and our read of it.
      for (let attempt = 0; attempt < 2; attempt++) {
        if (await write(0)) return null;
        const held = await kv.get(id);
        if (!held || held.operation !== 'PUT') continue;
        const claim = held.json<Claim>();
        if (claim.state === 'done' || claim.until > Date.now()) return claim;
        // In flight past its time: the gateway that held it died before the answer. Taken over (one winner).
        if (await write(held.revision)) return null;
      }
      return { state: 'in-flight', fingerprint, until: mine.until };
    },
    async done(id, fingerprint) {
      await kv.put(id, encode({ state: 'done', fingerprint }));
    },
    async release(id) {
      await kv.delete(id);
    },
  };
}
