import type { z } from 'zod';
import { EVENT_SUBJECT_PREFIX, EventEnvelope } from '../event';
import type { ServiceName } from '../services';
import { CredentialRevoked } from '../manage/auth';
import { DestinationsChanged } from '../manage/webhook-destinations';
import { SigningKeysChanged } from '../credential-gateway/token-exchange';
import { AppChanged, AppUsed } from './cross-service';
import { ProjectErasing, RunEventsErased } from '../manage/erasures';

/**
 * A notice: a core NATS message (fire-and-forget, not stored) that tells other processes something changed, so they
 * drop or replace what they cache at once. The durable record of a change is its event; a notice lost while a
 * connection was down is made up for by the subscriber (cache lifetimes, clearing on reconnect).
 * Published with `publishNotice(nc, def, payload)` and read with `subscribeNotice(nc, def, service, handler)` (libs/bus).
 */
export interface NoticeDef<P extends z.ZodType = z.ZodType> {
  /** camelCase, e.g. `appChanged`. */
  name: string;
  /** May contain wildcards only for subscriber-side taps such as `evt.*.*.webhook-destination.>`. */
  subject: string;
  /** The services that publish it; [] when the messages are JetStream event publishes seen on core NATS. */
  publishers: readonly ServiceName[];
  subscribers: readonly ServiceName[];
  payload: P;
  description: string;
  /** Subscribers use queue group = their service name (one replica gets each); otherwise every replica does. */
  queue?: boolean;
}

export function notice<P extends z.ZodType>(def: NoticeDef<P>): NoticeDef<P> {
  if (!/^[a-z][A-Za-z0-9]*$/.test(def.name)) throw new Error(`notice name ${def.name} is not camelCase`);
  if (def.publishers.length > 0 && /(^|\.)(\*|>)(\.|$)/.test(def.subject))
    throw new Error(`notice ${def.name}: a published subject has no wildcards`);
  return def;
}

export const appChanged = notice({
  name: 'appChanged',
  subject: 'internal.apps.changed',
  publishers: ['management'],
  subscribers: ['run-auth'],
  payload: AppChanged,
  description:
    'An app was created, changed (keys included) or deleted: its new state and revision. Every run-auth replica replaces its copy at once.',
});

export const appUsed = notice({
  name: 'appUsed',
  subject: 'internal.apps.used',
  publishers: ['run-auth'],
  subscribers: ['management'],
  payload: AppUsed,
  description:
    'An app authenticated a request (at most once a minute per app and run-auth process); one management replica records lastUsedAt.',
  queue: true,
});

export const credentialRevoked = notice({
  name: 'credentialRevoked',
  subject: 'internal.auth.revoked',
  publishers: ['management', 'analytics'],
  subscribers: ['gateway'],
  payload: CredentialRevoked,
  description:
    'A credential (API key, access token, session, analytics key) was revoked or changed; every gateway drops its cached verification.',
});

export const webhookDestinationsChanged = notice({
  name: 'webhookDestinationsChanged',
  subject: 'internal.webhook-destinations.changed',
  publishers: ['management'],
  subscribers: ['webhook-dispatcher'],
  payload: DestinationsChanged,
  description:
    "A project's webhook destinations changed (sent before the change is answered); every dispatcher replica drops its copy of the project's list.",
});

export const signingKeysChanged = notice({
  name: 'signingKeysChanged',
  subject: 'internal.credential-gateway.signing-keys.changed',
  publishers: ['credential-gateway'],
  subscribers: ['credential-gateway'],
  payload: SigningKeysChanged,
  description: 'The credential gateway rotated its signing key; every replica rereads its keys at once.',
});

export const webhookDestinationEvents = notice({
  name: 'webhookDestinationEvents',
  subject: `${EVENT_SUBJECT_PREFIX}.*.*.webhook-destination.>`,
  // The webhook-destination.* events management publishes to JetStream, read as they pass on core NATS.
  publishers: [],
  subscribers: ['webhook-dispatcher'],
  payload: EventEnvelope,
  description:
    "The webhook-destination.* events as they are published: every dispatcher replica drops its copy of the event's project list again.",
});

export const runEventsErased = notice({
  name: 'runEventsErased',
  subject: 'internal.events-ingest.erased',
  publishers: ['events-ingest'],
  subscribers: ['events-ingest'],
  payload: RunEventsErased,
  description:
    "A conversation's (or a project's) run events were erased; every events-ingest replica forgets the ids it remembers of them, so posting one again creates a new event.",
});

export const projectErasing = notice({
  name: 'projectErasing',
  subject: 'internal.erasures.project-erasing',
  publishers: ['management'],
  subscribers: ['gateway', 'webhook-dispatcher'],
  payload: ProjectErasing,
  description:
    "A project's erasure started or is done (sent before the deletion is answered); every gateway refuses writes to the project (409) from then until the erasure is done, and every webhook-dispatcher drops the delivery counters of the project it has not written yet and keeps none until then.",
});

/** Every notice. */
export const notices: readonly NoticeDef[] = [
  appChanged,
  appUsed,
  credentialRevoked,
  webhookDestinationsChanged,
  signingKeysChanged,
  webhookDestinationEvents,
  runEventsErased,
  projectErasing,
];
