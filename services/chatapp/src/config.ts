import { z } from 'zod';
import { auditConfig } from '@platform/config';

const optionalUrl = z.preprocess((v) => (v === '' ? undefined : v), z.url({ protocol: /^https?$/ }).optional());
const optionalString = z.preprocess((v) => (v === '' ? undefined : v), z.string().min(1).optional());

export const chatappConfig = z.object({
  CHATAPP_API_URL: optionalUrl.describe(
    "Base URL of the chat product's Web API (methods are POSTed to <url>/<method>, e.g. .../oauth.v2.access); unset disables every call to it",
  ),
  CHATAPP_AUTHORIZE_URL: optionalUrl.describe("The chat product's OAuth v2 authorize page that `install` redirects to"),
  CHATAPP_CLIENT_ID: optionalString.describe('OAuth client id of our app in the chat product'),
  CHATAPP_CLIENT_SECRET: optionalString.describe(
    'OAuth client secret of our app in the chat product (sent to oauth.v2.access only)',
  ),
  CHATAPP_SIGNING_SECRET: optionalString.describe(
    "The chat product's request-signing secret; used as the state and link-token key when CHATAPP_STATE_SECRET is unset",
  ),
  CHATAPP_STATE_SECRET: z
    .preprocess((v) => (v === '' ? undefined : v), z.string().min(16).optional())
    .describe(
      'HMAC key of OAuth `state`, link tokens and link-session tokens (defaults to CHATAPP_SIGNING_SECRET, else keys derived from ENCRYPTION_KEYS: the newest signs, every one verifies)',
    ),
  CHATAPP_REDIRECT_URL: optionalUrl.describe(
    'Our OAuth redirect URL as registered with the chat product (default: <gateway base URL>/work-apps/chatapp/oauth_redirect)',
  ),
  CHATAPP_RESULT_URL: z
    .url({ protocol: /^https?$/ })
    .default('http://127.0.0.1:3000/work-apps/chatapp/result')
    .describe(
      'Page the browser lands on after the OAuth callback; gets ?success=true&workspace=…&teamId=…&tenant_id=… or ?error=…',
    ),
  CHATAPP_LINK_URL: z
    .url({ protocol: /^https?$/ })
    .default('http://127.0.0.1:3000/work-apps/chatapp/link')
    .describe(
      'Page of the management UI where a signed-in user completes a link; link tokens are sent as <url>?token=<token>',
    ),
  CHATAPP_CONNECT_URL: optionalUrl.describe(
    "Deep link into the chat product's conversation with our bot; `users/connect` answers <url>?session=<sessionToken> (default: <CHATAPP_API_URL origin>/app_redirect?app=<client id>)",
  ),
  CHATAPP_SCOPES: z
    .string()
    .default(
      'app_mentions:read,channels:history,channels:read,chat:write,groups:read,im:history,im:write,users:read,users:read.email',
    )
    .describe('Bot scopes requested at install (comma separated)'),
  CHATAPP_API_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10000)
    .describe("Timeout of one call to the chat product's Web API"),
  CHATAPP_LINK_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(30)
    .max(86400)
    .default(600)
    .describe('Lifetime of link tokens and link sessions'),
  ...auditConfig.shape,
});
export type ChatappConfig = z.infer<typeof chatappConfig>;
