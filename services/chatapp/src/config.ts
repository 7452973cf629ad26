import { z } from 'zod';

export const chatappConfig = z.object({});
