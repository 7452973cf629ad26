import { EVENT_SUBJECT_PREFIX, PLATFORM_EVENTS_STREAM } from './event';
import { allEvents } from './events';
import { internalCalls } from './internal/calls';
import { notices } from './internal/notices';
import { durables, streams } from './internal/streams';
import { BACKEND_SERVICES, type ServiceName } from './services';
import { allOperations } from './operations';
import { publishersOf, subjectToken } from './event';

/**
 * The bus's permission table, derived from the declarations (docs/security.md, "The message bus"): each identity may
 * subscribe to what it serves (in its queue group) and publish what it calls, answer the requests it received
 * (`allowResponses`), read its own replies (`_INBOX_<identity>.>`), and use JetStream's API only for the streams it
 * publishes to and the durable consumers it owns. `pnpm nats:permissions` writes it to deploy/nats/permissions.json;
 * the credentials are issued from that file.
 */
export interface IdentityPermission {
  publish: string[];
  subscribe: string[];
  allowResponses: boolean;
}

/** Every identity of the permission table: the gateway and the services (libs/contracts/src/services.ts). */
export const BUS_IDENTITIES: readonly ServiceName[] = ['gateway', ...BACKEND_SERVICES];

/** Services started by libs/runtime: they make sure PLATFORM_EVENTS exists at boot. */
const RUNTIME_SERVICES: readonly ServiceName[] = BACKEND_SERVICES;

const JS = '$JS.API';

/** The prefix of an identity's reply subjects: its permissions let it read its own replies only. */
export function inboxPrefixFor(identity: string): string {
  return `_INBOX_${identity}`;
}

/**
 * Where `caller`'s requests to `owner` are answered: an inbox of the caller's own for that service (libs/bus), which
 * that service may publish to, so it can answer the requests of a batch one by one, and never answer for another.
 */
export function replyInboxFor(caller: string, owner: string): string {
  return `${inboxPrefixFor(caller)}.${owner}`;
}

export function busPermissions(): Record<string, IdentityPermission> {
  const table = new Map<ServiceName, { publish: Set<string>; subscribe: Set<string>; responds: boolean }>();
  const of = (s: ServiceName) => {
    let entry = table.get(s);
    if (!entry) {
      entry = { publish: new Set([`${JS}.INFO`]), subscribe: new Set([`${inboxPrefixFor(s)}.>`]), responds: false };
      table.set(s, entry);
    }
    return entry;
  };
  const serves = (owner: ServiceName, subject: string, callers: readonly ServiceName[]) => {
    of(owner).subscribe.add(`${subject} ${owner}`);
    of(owner).responds = true;
    for (const caller of callers) of(owner).publish.add(`${replyInboxFor(caller, owner)}.>`);
  };
  for (const s of BUS_IDENTITIES) of(s);

  // Public operations: only the gateway sends them (with the caller's principal); the owner serves them.
  for (const op of allOperations) {
    of('gateway').publish.add(op.subject);
    serves(op.service, op.subject, ['gateway']);
  }
  // Internal calls: the declared callers send, the owner serves.
  for (const call of internalCalls) {
    for (const caller of call.callers) of(caller).publish.add(call.subject);
    serves(call.owner, call.subject, call.callers);
  }
  // Notices (core NATS): publishers publish, subscribers read (in their queue group when the notice says so).
  for (const n of notices) {
    for (const p of n.publishers) of(p).publish.add(n.subject);
    for (const s of n.subscribers) of(s).subscribe.add(n.queue ? `${n.subject} ${s}` : n.subject);
  }
  // Events: each service publishes only the event types it is the publisher of (JetStream acknowledges to its inbox).
  for (const e of allEvents)
    for (const p of publishersOf(e)) of(p).publish.add(`${EVENT_SUBJECT_PREFIX}.*.*.${e.name}.v${e.version}`);
  // Streams: who publishes to a stream may look it up and create it (the first replica to start does).
  for (const stream of streams) {
    const users =
      stream.name === PLATFORM_EVENTS_STREAM
        ? RUNTIME_SERVICES
        : [...new Set([...stream.publishers, ...(stream.creators ?? [])])];
    for (const s of users) {
      of(s).publish.add(`${JS}.STREAM.INFO.${stream.name}`);
      of(s).publish.add(`${JS}.STREAM.CREATE.${stream.name}`);
    }
    if (stream.name !== PLATFORM_EVENTS_STREAM)
      for (const s of stream.publishers) for (const subject of stream.subjects) of(s).publish.add(subject);
    // A key-value bucket's users read single entries too (direct get, or the stream's message get).
    if (stream.keyValue)
      for (const s of users) {
        of(s).publish.add(`${JS}.DIRECT.GET.${stream.name}.>`);
        of(s).publish.add(`${JS}.STREAM.MSG.GET.${stream.name}`);
      }
  }
  // Durable consumers: create, look up, pull from and acknowledge only the service's own.
  for (const d of durables) {
    const p = of(d.service).publish;
    p.add(`${JS}.CONSUMER.CREATE.${d.stream}.${d.durable}`);
    p.add(`${JS}.CONSUMER.CREATE.${d.stream}.${d.durable}.>`);
    p.add(`${JS}.CONSUMER.DURABLE.CREATE.${d.stream}.${d.durable}`);
    p.add(`${JS}.CONSUMER.INFO.${d.stream}.${d.durable}`);
    p.add(`${JS}.CONSUMER.MSG.NEXT.${d.stream}.${d.durable}`);
    p.add(`$JS.ACK.${d.stream}.${d.durable}.>`);
  }

  const out: Record<string, IdentityPermission> = {};
  for (const s of BUS_IDENTITIES) {
    const e = of(s);
    out[s] = { publish: [...e.publish].sort(), subscribe: [...e.subscribe].sort(), allowResponses: e.responds };
  }
  return out;
}

export interface ConsumerGrant {
  tenantId: string;
  projectId?: string;
  /** The durable consumers it may create and read (names issued with the credential). */
  durables: readonly string[];
}

/** The subjects a consumer grant covers: `evt.<tenant>.>` or `evt.<tenant>.<project>.>`. */
export function consumerScope(grant: Pick<ConsumerGrant, 'tenantId' | 'projectId'>): string {
  const tenant = `${EVENT_SUBJECT_PREFIX}.${subjectToken(grant.tenantId)}`;
  return grant.projectId ? `${tenant}.${subjectToken(grant.projectId)}.>` : `${tenant}.>`;
}

/**
 * What a tenant's (or project's) event consumer may do: create, read, acknowledge and delete only its own durable
 * consumers on PLATFORM_EVENTS, and only with a filter inside its own subjects (the filtered consumer-create subject
 * carries the filter, and the server checks it against the consumer's configuration); read its replies on its own
 * inbox prefix; publish nothing else.
 */
export function consumerPermission(grant: ConsumerGrant, inboxPrefix: string): IdentityPermission {
  const scope = consumerScope(grant);
  const s = PLATFORM_EVENTS_STREAM;
  const publish = [`${JS}.INFO`];
  for (const d of grant.durables) {
    publish.push(
      `${JS}.CONSUMER.CREATE.${s}.${d}.${scope}`,
      `${JS}.CONSUMER.INFO.${s}.${d}`,
      `${JS}.CONSUMER.DELETE.${s}.${d}`,
      `${JS}.CONSUMER.MSG.NEXT.${s}.${d}`,
      `$JS.ACK.${s}.${d}.>`,
    );
  }
  return { publish, subscribe: [`${inboxPrefix}.>`], allowResponses: false };
}
