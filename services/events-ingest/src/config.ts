import { z } from 'zod';

export const eventsIngestConfig = z.object({
  OUTBOX_SWEEP_MS: z.coerce.number().int().min(100).default(2000).describe('How often events left unpublished (after a crash) are republished'),
});
