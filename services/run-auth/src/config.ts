import { z } from 'zod';

export const runAuthConfig = z.object({
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30000).describe('How long a verified credential is remembered (revocations clear it at once)'),
});
