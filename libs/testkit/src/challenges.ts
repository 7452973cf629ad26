import { createHash } from 'node:crypto';

export interface IssuedChallenge {
  algorithm: string;
  challenge: string;
  maxnumber?: number;
  salt: string;
  signature: string;
}

/** Solves an ALTCHA-style proof-of-work challenge as a browser widget would: the n with sha256(salt + n) = challenge. */
export function solveChallenge(c: IssuedChallenge) {
  const max = c.maxnumber ?? 1_000_000;
  for (let n = 0; n <= max; n++) {
    if (
      createHash('sha256')
        .update(c.salt + n)
        .digest('hex') === c.challenge
    ) {
      return { algorithm: c.algorithm, challenge: c.challenge, number: n, salt: c.salt, signature: c.signature };
    }
  }
  throw new Error('challenge has no solution within maxnumber');
}

/** The `x-challenge-solution` header value: base64 of the JSON solution (or of `{payload}`). */
export function solutionHeader(solution: unknown): string {
  return Buffer.from(JSON.stringify(solution)).toString('base64');
}
