import { EVENT_SUBJECT_PREFIX, type EventDef, PLATFORM_EVENTS_STREAM, publishersOf, subjectToken } from '../event';
import { allEvents, webhookEvents } from '../events';
import type { ServiceName } from '../services';
import { PROJECT_ERASURE_SERVICES } from '../manage/erasures';
import { IDEMPOTENCY_KEY_TTL_SECONDS } from '../repeat';

/** A JetStream stream: its subjects and the services that publish to it. */
export interface StreamDef {
  name: string;
  subjects: readonly string[];
  publishers: readonly ServiceName[];
  /** Services that consume it and may create it at boot (when they start before its publishers), without publishing. */
  creators?: readonly ServiceName[];
  retention: 'limits' | 'workqueue' | 'interest';
  /** The stream of a JetStream key-value bucket: its users also read single entries (direct get). */
  keyValue?: boolean;
  maxAgeMs?: number;
  duplicateWindowMs?: number;
  description: string;
}

/** A durable consumer a service creates on a stream. */
export interface DurableDef {
  stream: string;
  /** The exact durable name, or `*`: any durable of that stream (names made at run time, such as per partition). */
  durable: string;
  service: ServiceName;
  description: string;
}

export const platformEventsStreamDef: StreamDef = {
  name: PLATFORM_EVENTS_STREAM,
  subjects: [`${EVENT_SUBJECT_PREFIX}.>`],
  publishers: [...new Set(allEvents.flatMap(publishersOf))],
  retention: 'limits',
  maxAgeMs: 7 * 24 * 3600 * 1000,
  duplicateWindowMs: 10 * 60 * 1000,
  description:
    "Every public platform event (`evt.<tenant>.<project>.<name>.v<version>`), published from the services' outboxes.",
};

/** The evals work queue: evaluation items and improvement assistant turns. */
export const EVAL_WORK_STREAM = 'EVAL_WORK';
export const EVAL_WORK_SUBJECT_PREFIX = 'work.evals.items';

export const evalWorkStreamDef: StreamDef = {
  name: EVAL_WORK_STREAM,
  subjects: [`${EVAL_WORK_SUBJECT_PREFIX}.>`],
  publishers: ['evals'],
  retention: 'workqueue',
  duplicateWindowMs: 10 * 60 * 1000,
  description:
    'The evals work queue (each message removed once acknowledged): evaluation items and improvement assistant turns.',
};

/** The subject of a work item of a tenant on the evals work queue. */
export const evalWorkSubject = (tenantId: string) => `${EVAL_WORK_SUBJECT_PREFIX}.${subjectToken(tenantId)}`;

/** Webhook delivery jobs (retries, deliveries waiting for a busy destination) wait here until they are due. */
export const WEBHOOK_JOBS_STREAM = 'WEBHOOK_JOBS';
const WEBHOOK_JOBS_SUBJECT_PREFIX = 'webhook-jobs';

export const webhookJobsStreamDef: StreamDef = {
  name: WEBHOOK_JOBS_STREAM,
  subjects: [`${WEBHOOK_JOBS_SUBJECT_PREFIX}.>`],
  publishers: ['webhook-dispatcher'],
  retention: 'workqueue',
  duplicateWindowMs: 10 * 60 * 1000,
  description:
    'Webhook delivery jobs that are not due yet, one subject per dispatcher partition (`webhook-jobs.<partition>`); a job is gone once worked.',
};

/** The subject of a dispatcher partition's jobs (`partition`: letters, digits, `-` and `_` only). */
export const webhookJobsSubject = (partition: string) => `${WEBHOOK_JOBS_SUBJECT_PREFIX}.${partition}`;

/** Erasure jobs (a conversation or a whole project): every owning service reads each job with its own durable. */
export const ERASURE_STREAM = 'ERASURE';
const ERASURE_SUBJECT_PREFIX = 'work.erasure';

export const erasureStreamDef: StreamDef = {
  name: ERASURE_STREAM,
  subjects: [`${ERASURE_SUBJECT_PREFIX}.>`],
  publishers: ['management'],
  creators: PROJECT_ERASURE_SERVICES,
  retention: 'limits',
  maxAgeMs: 30 * 24 * 3600 * 1000,
  duplicateWindowMs: 10 * 60 * 1000,
  description:
    'Erasure jobs (`work.erasure.<tenant>`), published by management; each service that holds project data erases its part with its own durable and reports it (reportErasure).',
};

/** The subject of a tenant's erasure jobs. */
export const erasureSubject = (tenantId: string) => `${ERASURE_SUBJECT_PREFIX}.${subjectToken(tenantId)}`;

/** A service's durable on the erasure jobs. */
export const erasureDurable = (service: ServiceName) => `${service}-erasure`;

/** The key-value bucket of the gateway's durable Idempotency-Key claims (services/gateway idempotency-claims.ts). */
export const IDEMPOTENCY_CLAIMS_BUCKET = 'IDEMPOTENCY_CLAIMS';

export const idempotencyClaimsStreamDef: StreamDef = {
  name: `KV_${IDEMPOTENCY_CLAIMS_BUCKET}`,
  subjects: [`$KV.${IDEMPOTENCY_CLAIMS_BUCKET}.>`],
  publishers: ['gateway'],
  retention: 'limits',
  keyValue: true,
  // An entry lives as long as the answer to its key is promised (24 h from its last write), and an hour more.
  maxAgeMs: (IDEMPOTENCY_KEY_TTL_SECONDS + 3600) * 1000,
  description:
    "The gateway's claims of Idempotency-Keys (a key-value bucket: one entry per tenant and key, named by their SHA-256, holding a fingerprint of the request and whether it is in flight or done): a create is never sent twice for one key, even when Redis, which keeps the answers, loses them.",
};

/** Every stream. */
export const streams: readonly StreamDef[] = [
  platformEventsStreamDef,
  evalWorkStreamDef,
  webhookJobsStreamDef,
  erasureStreamDef,
  idempotencyClaimsStreamDef,
];

/** The dispatcher's durable for the first deliveries of one webhook event type (durable names take no dots). */
export const webhookEventDurable = (def: EventDef) => `webhook-dispatcher-${def.name.replace(/\./g, '-')}`;

/** The dispatcher's durable for its partition's jobs. */
export const webhookJobsDurable = (partition: string) => `webhook-dispatcher-jobs-${partition}`;

export const evalWorkDurable: DurableDef = {
  stream: EVAL_WORK_STREAM,
  durable: 'evals-work',
  service: 'evals',
  description: 'Shared by every evals replica: works evaluation items and improvement assistant turns.',
};

/** Management's copy of the other services' audit entries (the tenants' audit log reads management's collection). */
export const auditCopyDurable: DurableDef = {
  stream: PLATFORM_EVENTS_STREAM,
  durable: 'management-audit',
  service: 'management',
  description:
    "Copies the audit entries of the other services (their audit.recorded events) into the tenants' audit log.",
};

/** Every durable consumer a service creates. */
export const durables: readonly DurableDef[] = [
  ...webhookEvents.map((def) => ({
    stream: PLATFORM_EVENTS_STREAM,
    durable: webhookEventDurable(def),
    service: 'webhook-dispatcher' as const,
    description: `First delivery attempts of ${def.name} events to the webhook destinations that subscribe to it.`,
  })),
  {
    stream: WEBHOOK_JOBS_STREAM,
    durable: '*',
    service: 'webhook-dispatcher',
    description:
      "One per dispatcher partition (webhook-dispatcher-jobs-<partition>): the partition's delivery jobs as they fall due.",
  },
  evalWorkDurable,
  auditCopyDurable,
  ...PROJECT_ERASURE_SERVICES.map((service) => ({
    stream: ERASURE_STREAM,
    durable: erasureDurable(service),
    service,
    description: `${service} erases its part of each erasure job and reports it.`,
  })),
];
