import { z } from 'zod';
import { auditConfig } from '@platform/config';

export const credentialGatewayConfig = z.object({
  CREDENTIAL_GATEWAY_ISSUER: z
    .string()
    .min(1)
    .default('urn:platform:credential-gateway')
    .describe('`iss` of issued tokens (platforms check it)'),
  CREDENTIAL_GATEWAY_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(30)
    .max(3600)
    .default(300)
    .describe("Lifetime of an issued token (capped by the subject token's own expiry)"),
  CREDENTIAL_GATEWAY_SIGNING_ALG: z
    .enum(['ES256', 'EdDSA'])
    .default('ES256')
    .describe('Algorithm of newly created signing keys (existing keys keep theirs)'),
  CREDENTIAL_GATEWAY_KEY_ROTATION_DAYS: z.coerce
    .number()
    .min(0)
    .default(30)
    .describe('Create a new signing key when the newest is older than this many days (0: only on request)'),
  CREDENTIAL_GATEWAY_KEY_REFRESH_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3600)
    .default(60)
    .describe('How often each replica rereads the signing keys (a rotation is also announced on NATS at once)'),
  CREDENTIAL_GATEWAY_PLATFORMS_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('Path of a JSON platform catalog (`{platforms: [...]}`, see README); unset: the built-in catalog'),
  CREDENTIAL_GATEWAY_CATALOG_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(3600)
    .describe('`Cache-Control: public, max-age` of the platform catalog'),
  CREDENTIAL_GATEWAY_JWKS_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(300)
    .describe('`Cache-Control: public, max-age` of the key set'),
  ...auditConfig.shape,
});
export type CredentialGatewayConfig = z.infer<typeof credentialGatewayConfig>;
