import { z } from 'zod';

export const credentialGatewayConfig = z.object({});
