import * as oidc from 'openid-client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { anApp, aProject, http } from '@platform/testkit';
import { admin, stack } from '../support/stack';

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const ISSUER = 'urn:platform:credential-gateway';

/** An openid-client configuration for the credential gateway as an OAuth server (public client: no client authentication). */
function gatewayAsServer(appId: string): oidc.Configuration {
  const config = new oidc.Configuration(
    {
      issuer: ISSUER,
      token_endpoint: `${stack.gatewayUrl}/credential-gateway/token`,
      jwks_uri: `${stack.gatewayUrl}/credential-gateway/.well-known/jwks.json`,
    },
    appId,
    undefined,
    oidc.None(),
  );
  // The test stack listens on plain http on loopback.
  oidc.allowInsecureRequests(config);
  return config;
}

async function anonymousToken(appId: string): Promise<string> {
  const res = await http('POST', `${stack.gatewayUrl}/run/auth/apps/${appId}/anonymous-session`, {
    headers: { origin: 'https://app.example.com' },
  });
  if (res.status !== 200) throw new Error(`anonymous session failed: ${res.status}`);
  return res.body.token as string;
}

describe('token exchange with a standard OAuth client (openid-client)', () => {
  test('when openid-client performs the RFC 8693 grant, then it receives a Bearer token that verifies against the published key set', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const config = gatewayAsServer(app.id);
    const tokens = await oidc.genericGrantRequest(config, GRANT, {
      subject_token: await anonymousToken(app.id),
      subject_token_type: ACCESS_TOKEN,
      audience: 'helpdesk',
      svc_app_id: app.id,
    });
    // oauth4webapi normalises token_type to lower case.
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(300);
    expect(tokens.issued_token_type).toBe(ACCESS_TOKEN);
    const { payload } = await jwtVerify(
      tokens.access_token,
      createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!)),
      { issuer: ISSUER, audience: 'helpdesk' },
    );
    expect(payload).toMatchObject({ client_id: app.id, tid: p.tenantId, pid: p.projectId });
  });

  test('when the audience is not allowed, then openid-client surfaces the OAuth error invalid_target with status 400', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const config = gatewayAsServer(app.id);
    const failure = await oidc
      .genericGrantRequest(config, GRANT, {
        subject_token: await anonymousToken(app.id),
        subject_token_type: ACCESS_TOKEN,
        audience: 'nowhere',
        svc_app_id: app.id,
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(oidc.ResponseBodyError);
    expect(failure).toMatchObject({ error: 'invalid_target', status: 400 });
  });
});
