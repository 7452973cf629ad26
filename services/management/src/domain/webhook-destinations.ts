import {
  pendingEvent,
  webhookDestinationCreated,
  webhookDestinationDeleted,
  webhookDestinationUpdated,
  type ProjectScope,
  type WebhookDestinationCreate,
  type WebhookDestinationUpdate,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { isDuplicateKey } from '@platform/mongo';
import { randomId } from '@platform/secrets';
import type { WebhookDestinationRepo } from '../data/webhook-destination.repo';
import { toWebhookDestination } from '../data/webhook-destination.repo';
import type { WebhookDestinationDoc } from '../data/webhook-destination.model';

export interface WebhookDestinationDeps {
  destinations: WebhookDestinationRepo;
}

const notFound = () => new AppError('not_found', 'Webhook destination not found');

export async function addWebhookDestination(deps: WebhookDestinationDeps, scope: ProjectScope, input: WebhookDestinationCreate) {
  const now = new Date();
  const id = input.id ?? randomId(16);
  try {
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
        secret: null,
        revision: 1,
        createdAt: now,
        updatedAt: now,
      },
      (d) => [pendingEvent(webhookDestinationCreated, randomId(24), scope, { destination: toWebhookDestination(d) })],
    );
    return toWebhookDestination(doc);
  } catch (err) {
    if (isDuplicateKey(err)) throw new AppError('conflict', `A webhook destination with id "${id}" already exists`);
    throw err;
  }
}

export async function findWebhookDestination(deps: WebhookDestinationDeps, scope: ProjectScope, id: string) {
  const doc = await deps.destinations.findById(scope, id);
  if (!doc) throw notFound();
  return toWebhookDestination(doc);
}

export async function changeWebhookDestination(deps: WebhookDestinationDeps, scope: ProjectScope, id: string, input: WebhookDestinationUpdate) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await deps.destinations.findById(scope, id);
    if (!current) throw notFound();
    const set: Partial<WebhookDestinationDoc> = { updatedAt: new Date() };
    for (const key of ['name', 'description', 'enabled', 'eventTypes', 'agentIds', 'evaluatorIds', 'headers'] as const) {
      if (input[key] !== undefined) (set as Record<string, unknown>)[key] = input[key];
    }
    // Exactly one target must remain: setting one clears the other.
    if (typeof input.url === 'string') Object.assign(set, { url: input.url, chatappChannelId: null });
    if (typeof input.chatappChannelId === 'string') Object.assign(set, { chatappChannelId: input.chatappChannelId, url: null });
    const nextUrl = set.url !== undefined ? set.url : input.url === null ? null : current.url;
    const nextChannel = set.chatappChannelId !== undefined ? set.chatappChannelId : input.chatappChannelId === null ? null : current.chatappChannelId;
    if (!nextUrl && !nextChannel) {
      throw new AppError('unprocessable_entity', 'A webhook destination needs exactly one of url and chatappChannelId', {
        errors: [{ pointer: '/url', detail: 'give exactly one of url and chatappChannelId' }],
      });
    }
    set.url = nextUrl;
    set.chatappChannelId = nextChannel;
    const updated = await deps.destinations.update(scope, id, set, (d) => [pendingEvent(webhookDestinationUpdated, randomId(24), scope, { destination: toWebhookDestination(d) })], current);
    if (updated) return toWebhookDestination(updated);
  }
  throw new AppError('conflict', 'The webhook destination changed concurrently; retry');
}

export async function removeWebhookDestination(deps: WebhookDestinationDeps, scope: ProjectScope, id: string) {
  const removed = await deps.destinations.remove(scope, id, () => [pendingEvent(webhookDestinationDeleted, randomId(24), scope, { id })]);
  if (!removed) throw notFound();
}

export async function listWebhookDestinationsPage(deps: WebhookDestinationDeps, scope: ProjectScope, q: { page: number; limit: number; agentId?: string }) {
  const { rows, total } = await deps.destinations.list(scope, { agentId: q.agentId }, q.page, q.limit);
  return { rows: rows.map(toWebhookDestination), total };
}
