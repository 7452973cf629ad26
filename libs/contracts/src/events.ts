import { z } from 'zod';
import { event } from './event';
import { RunEvent } from './run/events';
import { WebhookDestination } from './manage/webhook-destinations';

/** A run event was stored (POST /run/v1/events, 201). Feeds the `event.created` webhook family. */
export const eventCreated = event({
  name: 'event.created',
  version: 1,
  publisher: 'events-ingest',
  description: 'A run event was stored. `data.event` is the persisted event; `data.dispatch` says whether webhook delivery applies (an agent scope and a resolved ref existed).',
  payload: z.object({ event: RunEvent, dispatch: z.boolean() }),
  webhookFamily: 'event.created',
});

const DestinationChange = z.object({ destination: WebhookDestination });

export const webhookDestinationCreated = event({
  name: 'webhook-destination.created',
  version: 1,
  publisher: 'management',
  description: 'A webhook destination was created.',
  payload: DestinationChange,
});
export const webhookDestinationUpdated = event({
  name: 'webhook-destination.updated',
  version: 1,
  publisher: 'management',
  description: 'A webhook destination was changed (the payload carries the whole new state).',
  payload: DestinationChange,
});
export const webhookDestinationDeleted = event({
  name: 'webhook-destination.deleted',
  version: 1,
  publisher: 'management',
  description: 'A webhook destination was deleted.',
  payload: z.object({ id: z.string() }),
});

export const apiKeyRevoked = event({
  name: 'api-key.revoked',
  version: 1,
  publisher: 'management',
  description: 'An API key was deleted or changed; caches of its verification must drop it.',
  payload: z.object({ id: z.string(), publicId: z.string() }),
});

/** Every event we publish, for the AsyncAPI document and consumers. */
export const allEvents = [eventCreated, webhookDestinationCreated, webhookDestinationUpdated, webhookDestinationDeleted, apiKeyRevoked];
