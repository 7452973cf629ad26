import { z } from 'zod';
import { auditConfig } from '@platform/config';

export const managementConfig = z.object({
  ADMIN_TOKEN: z
    .string()
    .min(24)
    .describe('The platform admin bearer token (all tenants). npm start generates one into .local/admin-token'),
  TOKEN_PEPPER: z
    .string()
    .min(16)
    .describe('Server-side key of the keyed hash (HMAC-SHA-256) under which API keys and access tokens are stored'),
  SESSION_COOKIE_PREFIX: z.string().default('platform').describe('Session cookie name is <prefix>.session_token'),
  SESSION_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .default(7 * 24 * 3600)
    .describe('Lifetime of a browser session'),
  PLAYGROUND_SIGNING_KEY: z
    .string()
    .min(32)
    .optional()
    .describe('HMAC key of playground tokens (defaults to a key derived from TOKEN_PEPPER)'),
  PLAYGROUND_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .default(3600)
    .describe('Lifetime of a playground token'),
  ALLOW_LOOPBACK_WEBHOOKS: z
    .string()
    .optional()
    .describe('Development only: "true" accepts webhook URLs on loopback addresses'),
  WEBHOOK_SECRET_GRACE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 3600)
    .default(24 * 3600)
    .describe(
      'After a signing-secret rotation, how long the previous secret keeps signing next to the new one (a rotate request may say otherwise)',
    ),
  TRIGGER_RATE_LIMIT_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(1)
    .default(600)
    .describe('Webhook calls one trigger accepts per minute unless it sets its own rateLimitPerMinute (more get 429)'),
  TRIGGER_DISPATCH_SWEEP_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(2000)
    .describe(
      'How often pending trigger execution requests are looked for and published when due (after a restart, or after a long dispatchDelayMs)',
    ),
  ...auditConfig.shape,
});
export type ManagementConfig = z.infer<typeof managementConfig>;
