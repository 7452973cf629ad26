import { z } from 'zod';

export const webhookDispatcherConfig = z.object({
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10000).describe('Timeout of one delivery attempt'),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).default(32).describe('Events worked at once by one replica'),
  WEBHOOK_RETRY_DELAY_MS: z.coerce.number().int().min(0).default(5000).describe('Delay before a failed delivery is tried again'),
  DESTINATION_CACHE_MS: z.coerce.number().int().min(0).default(2000).describe('How long a project\'s destinations are remembered (changes clear it at once)'),
});
export type WebhookDispatcherConfig = z.infer<typeof webhookDispatcherConfig>;
