import { z } from 'zod';

export const analyticsConfig = z.object({});
