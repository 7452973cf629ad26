import { ProblemError } from '@platform/client';
import type { HttpResult } from '@platform/testkit';

/** Asserts an RFC 9457 problem answer with `status`, and (when given) an `errors` entry at `pointer`. */
export function expectProblem(res: HttpResult, status: number, pointer?: string): void {
  expect(res.status).toBe(status);
  expect(res.contentType).toMatch(/application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code: expect.any(String), detail: expect.any(String) });
  if (pointer) expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ pointer })]));
}

/** The problem a typed-client call was rejected with (the typed client throws problem answers); fails when it was not. */
export async function problemOf(call: Promise<unknown>): Promise<ProblemError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProblemError);
  return err as ProblemError;
}
