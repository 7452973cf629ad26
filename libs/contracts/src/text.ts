import { z } from 'zod';

/**
 * Free text stored as is. NUL is refused: the PostgreSQL-backed Mongo-wire server cannot store it
 * (it would fail the write with a 500 instead of telling the caller).
 */
export function text(opts: { min?: number; max: number }) {
  return z
    .string()
    .min(opts.min ?? 0)
    .max(opts.max)
    .regex(/^[^\u0000]*$/, 'must not contain NUL characters');
}
