import { adminClient, testStack } from '@platform/testkit';

/*
 * What most end-to-end test files begin with: the stack jest's global setup started (its URLs and admin token) and
 * a client of its gateway holding the platform admin token.
 */

export const stack = testStack();
export const admin = adminClient(stack);
