import { RE2JS } from 're2js';

/**
 * Tenant regular expressions run on RE2 (re2js), whose matching time is linear in the text: no pattern (`^(a+)+$`
 * included) can make the shared evals process backtrack for minutes and stall every tenant's evaluations.
 * RE2 has no lookaround and no backreferences; such patterns are refused when the evaluator is created.
 */
const FLAGS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, u: 0 };

export interface Pattern {
  test(text: string): boolean;
}

/** Compiles a tenant pattern with the JavaScript flags `i`, `m`, `s`, `u`; throws with RE2's reason when it cannot. */
export function compilePattern(pattern: string, flags = ''): Pattern {
  let bits = 0;
  for (const f of flags) {
    const bit = FLAGS[f];
    if (bit === undefined) throw new Error(`unsupported flag ${f}`);
    bits |= bit;
  }
  const re = RE2JS.compile(pattern, bits);
  return { test: (text) => re.test(text) };
}
