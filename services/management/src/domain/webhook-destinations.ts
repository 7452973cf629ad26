import {
  pendingEvent,
  webhookDestinationCreated,
  webhookDestinationDeleted,
  webhookDestinationUpdated,
  webhookSecretBinding,
  type DispatchDestination,
  type ProjectScope,
  type WebhookDestinationCreate,
  type WebhookDestinationUpdate,
} from '@platform/contracts';
import { randomBytes } from 'node:crypto';
import { checkUrl } from '@platform/address-safety';
import { AppError } from '@platform/problems';
import { randomId, type SecretBox } from '@platform/secrets';
import {
  type WebhookDestinationRepo,
  toDispatchDestination,
  toWebhookDestination,
  type StoredWebhookDestination,
} from '../data/webhook-destination.repo';

export interface WebhookDestinationDeps {
  destinations: WebhookDestinationRepo;
  /** Seals signing secrets at rest (ENCRYPTION_KEYS), bound to their destination. */
  box: SecretBox;
  /** Development only: accept loopback URLs (ALLOW_LOOPBACK_WEBHOOKS). */
  allowLoopback: boolean;
  /** Default grace period of a rotated-out secret. */
  secretGraceSeconds: number;
  /** Tells the dispatcher, before the change is answered, that the project's destinations changed. */
  announceChanged: (scope: ProjectScope) => void;
}

const notFound = () => new AppError('not_found', 'Webhook destination not found');

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * A URL whose host is a literal IP must be a public address (loopback only when allowed for development).
 * Host names are checked when they are resolved, at every delivery.
 */
export function assertDeliverableUrl(url: string, allowLoopback: boolean): void {
  const v = checkUrl(url, { allowLoopback });
  const reject = (detail: string) =>
    new AppError('unprocessable_entity', `The webhook URL is not deliverable: ${detail}`, {
      errors: [{ pointer: '/url', detail }],
    });
  if (v.kind === 'invalid') throw reject(v.reason);
  if (v.kind === 'literal' && !v.verdict.allowed)
    throw reject(`${v.verdict.reason}; webhooks go only to public addresses`);
}

export async function addWebhookDestination(
  deps: WebhookDestinationDeps,
  scope: ProjectScope,
  input: WebhookDestinationCreate,
) {
  if (input.url) assertDeliverableUrl(input.url, deps.allowLoopback);
  const now = new Date();
  const id = input.id ?? randomId(16);
  const secret = newSigningSecret();
  const doc = await deps.destinations.insert(
    {
      id,
      ...scope,
      name: input.name,
      description: input.description ?? null,
      enabled: input.enabled ?? true,
      eventTypes: input.eventTypes,
      agentIds: input.agentIds ?? [],
      evaluatorIds: input.evaluatorIds ?? [],
      headers: input.headers ?? {},
      url: input.url ?? null,
      chatappChannelId: input.chatappChannelId ?? null,
      disabledReason: null,
      secret: deps.box.seal(secret, webhookSecretBinding({ ...scope, id })),
      previousSecret: null,
      previousSecretExpiresAt: null,
      revision: 1,
      createdAt: now,
      updatedAt: now,
    },
    (d) => [pendingEvent(webhookDestinationCreated, randomId(24), scope, { destination: toWebhookDestination(d) })],
  );
  if (!doc) throw new AppError('conflict', `A webhook destination with id "${id}" already exists`);
  deps.announceChanged(scope);
  return { ...toWebhookDestination(doc), secret };
}

export async function findWebhookDestination(deps: WebhookDestinationDeps, scope: ProjectScope, id: string) {
  const doc = await deps.destinations.findById(scope, id);
  if (!doc) throw notFound();
  return toWebhookDestination(doc);
}

export async function changeWebhookDestination(
  deps: WebhookDestinationDeps,
  scope: ProjectScope,
  id: string,
  input: WebhookDestinationUpdate,
) {
  if (typeof input.url === 'string') assertDeliverableUrl(input.url, deps.allowLoopback);
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await deps.destinations.findById(scope, id);
    if (!current) throw notFound();
    const set: Partial<StoredWebhookDestination> = { updatedAt: new Date() };
    for (const key of [
      'name',
      'description',
      'enabled',
      'eventTypes',
      'agentIds',
      'evaluatorIds',
      'headers',
    ] as const) {
      if (input[key] !== undefined) (set as Record<string, unknown>)[key] = input[key];
    }
    // A user switching it on or off clears the reason delivery gave for turning it off.
    if (input.enabled !== undefined) set.disabledReason = null;
    // Exactly one target must remain: setting one clears the other.
    if (typeof input.url === 'string') Object.assign(set, { url: input.url, chatappChannelId: null });
    if (typeof input.chatappChannelId === 'string')
      Object.assign(set, { chatappChannelId: input.chatappChannelId, url: null });
    const nextUrl = set.url !== undefined ? set.url : input.url === null ? null : current.url;
    const nextChannel =
      set.chatappChannelId !== undefined
        ? set.chatappChannelId
        : input.chatappChannelId === null
          ? null
          : current.chatappChannelId;
    if (!nextUrl && !nextChannel) {
      throw new AppError(
        'unprocessable_entity',
        'A webhook destination needs exactly one of url and chatappChannelId',
        {
          errors: [{ pointer: '/url', detail: 'give exactly one of url and chatappChannelId' }],
        },
      );
    }
    set.url = nextUrl;
    set.chatappChannelId = nextChannel;
    const updated = await writeChange(deps, scope, id, set, current);
    if (!updated) continue;
    return toWebhookDestination(updated);
  }
  throw new AppError('conflict', 'The webhook destination changed concurrently; retry');
}

/**
 * Writes `set` over `current` (read at its revision) with the `webhook_destination.updated` event of the result, and
 * tells the gateway the project's destinations changed; null when another write came first (the caller reads again).
 */
async function writeChange(
  deps: WebhookDestinationDeps,
  scope: ProjectScope,
  id: string,
  set: Partial<StoredWebhookDestination>,
  current: StoredWebhookDestination,
): Promise<StoredWebhookDestination | null> {
  const updated = await deps.destinations.update(
    scope,
    id,
    set,
    (d) => [pendingEvent(webhookDestinationUpdated, randomId(24), scope, { destination: toWebhookDestination(d) })],
    current,
  );
  if (updated) deps.announceChanged(scope);
  return updated;
}

/** A new signing secret, shown once; the previous one keeps signing (next to it) for the grace period. */
export async function rotateWebhookDestinationSecret(
  deps: WebhookDestinationDeps,
  scope: ProjectScope,
  id: string,
  graceSeconds = deps.secretGraceSeconds,
) {
  const secret = newSigningSecret();
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await deps.destinations.findById(scope, id);
    if (!current) throw notFound();
    const now = new Date();
    const keepPrevious = graceSeconds > 0 && current.secret !== null;
    const previousSecretExpiresAt = keepPrevious ? new Date(now.getTime() + graceSeconds * 1000) : null;
    const set: Partial<StoredWebhookDestination> = {
      // The previous secret stays as it was sealed: for the same destination.
      secret: deps.box.seal(secret, webhookSecretBinding({ ...scope, id })),
      previousSecret: keepPrevious ? current.secret : null,
      previousSecretExpiresAt,
      updatedAt: now,
    };
    const updated = await writeChange(deps, scope, id, set, current);
    if (!updated) continue;
    return { id, secret, previousSecretExpiresAt: previousSecretExpiresAt?.toISOString() ?? null };
  }
  throw new AppError('conflict', 'The webhook destination changed concurrently; retry');
}

/**
 * Delivery turned the destination off (410 Gone, or failing for days). Idempotent: a destination already off
 * keeps its state, a deleted one is answered `false`.
 */
export async function disableWebhookDestinationForDelivery(
  deps: WebhookDestinationDeps,
  scope: ProjectScope,
  id: string,
  reason: string,
): Promise<boolean> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await deps.destinations.findById(scope, id);
    if (!current) return false;
    if (!current.enabled) return true;
    const set: Partial<StoredWebhookDestination> = { enabled: false, disabledReason: reason, updatedAt: new Date() };
    const updated = await writeChange(deps, scope, id, set, current);
    if (!updated) continue;
    return true;
  }
  throw new AppError('conflict', 'The webhook destination changed concurrently; retry');
}

export async function removeWebhookDestination(deps: WebhookDestinationDeps, scope: ProjectScope, id: string) {
  const removed = await deps.destinations.remove(scope, id, () => [
    pendingEvent(webhookDestinationDeleted, randomId(24), scope, { id }),
  ]);
  if (!removed) throw notFound();
  deps.announceChanged(scope);
}

export async function listWebhookDestinationsPage(
  deps: WebhookDestinationDeps,
  scope: ProjectScope,
  q: { page: number; limit: number; agentId?: string },
) {
  const { rows, total } = await deps.destinations.list(scope, { agentId: q.agentId }, q.page, q.limit);
  return { rows: rows.map(toWebhookDestination), total };
}

/** Every destination of a project, with its sealed secrets, for the webhook dispatcher. */
export async function listDestinationsForDispatch(
  deps: WebhookDestinationDeps,
  scope: ProjectScope,
): Promise<DispatchDestination[]> {
  return (await deps.destinations.allOfProject(scope)).map(toDispatchDestination);
}
