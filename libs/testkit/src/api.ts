import { platformClient, type PlatformClient } from '@platform/client';
import { testStack, type TestStackInfo } from './fixtures';

/**
 * The typed client (libs/client) on the test stack, with the admin credential unless another token is given.
 * Use it wherever a test is not about the raw HTTP (status lines, headers, content types, malformed bodies).
 */
export function adminApi(
  info: Pick<TestStackInfo, 'gatewayUrl' | 'adminToken' | 'analyticsUrl'> = testStack(),
  token: string | undefined = info.adminToken,
): PlatformClient {
  return platformClient({ baseUrl: info.gatewayUrl, analyticsUrl: info.analyticsUrl, token });
}
