import { z } from 'zod';

/** Internal (NATS only): the gateway asks run-auth who a run-API request is. Reply: `{principal}` or a 401/403 problem. */
export const AUTHENTICATE_RUN_SUBJECT = 'svc.run-auth.authenticate';
export const AuthenticateRunRequest = z.object({
  /** The bearer credential (API key, app JWT, anonymous session token, playground or OAuth token). */
  token: z.string(),
  /** `x-app-id` header, selecting the app for app-credential JWTs. */
  appId: z.string().optional(),
  origin: z.string().optional(),
});
export type AuthenticateRunRequest = z.infer<typeof AuthenticateRunRequest>;

/** `serverMetadata.authMethod` values. */
export const AUTH_METHODS = {
  apiKey: 'api_key',
  playground: 'playground_token',
  appJwt: 'app_credential_web_client_authenticated',
  anonymous: 'app_credential_web_client',
  supportCopilot: 'app_credential_support_copilot',
} as const;
