import { z } from 'zod';

export const evalsConfig = z.object({});
