import { AppError, type FieldError } from '@platform/problems';

/** A 422 naming every problem found in a request that was well-formed but cannot be accepted. */
export function unprocessable(errors: FieldError[]): AppError {
  return new AppError('unprocessable_entity', `${errors[0]!.pointer}: ${errors[0]!.detail}`, { errors });
}
