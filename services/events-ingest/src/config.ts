import { z } from 'zod';

/** events-ingest has no settings of its own: it reads those of every service with a database (libs/config). */
export const eventsIngestConfig = z.object({});
