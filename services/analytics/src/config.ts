import { z } from 'zod';
import { auditConfig } from '@platform/config';

export const analyticsConfig = z.object({
  TOKEN_PEPPER: z
    .string()
    .min(16)
    .describe(
      'Server-side key of the keyed hash (HMAC-SHA-256) under which analytics keys are stored (the same secret management uses for API keys)',
    ),
  ...auditConfig.shape,
});
export type AnalyticsConfig = z.infer<typeof analyticsConfig>;
