// jmespath exports `compile` (parse an expression without running it); @types/jmespath does not declare it.
import 'jmespath';

declare module 'jmespath' {
  export function compile(expression: string): unknown;
}
