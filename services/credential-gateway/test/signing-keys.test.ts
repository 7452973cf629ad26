import { publishedKeys } from '../src/domain/signing-keys';

const at = (s: number) => ({ kid: `k${s}`, createdAt: new Date(s * 1000) });
const kids = (keys: Array<{ kid: string }>) => keys.map((k) => k.kid);

describe('which signing keys the key set publishes', () => {
  test('when there is one key, then it is published', () => {
    expect(kids(publishedKeys([at(0)], 10_000_000, 60_000))).toEqual(['k0']);
  });

  test('when a key was replaced less than the window ago, then both are published, newest first', () => {
    expect(kids(publishedKeys([at(0), at(1000)], 1000_000 + 59_000, 60_000))).toEqual(['k1000', 'k0']);
  });

  test('when the window has passed since a key was replaced, then only keys whose tokens may still be valid remain', () => {
    // k0 was replaced at 1000 s, k1000 at 1030 s; at 1070 s (window 60 s) k0's tokens have all expired, k1000's not.
    expect(kids(publishedKeys([at(1030), at(0), at(1000)], 1070_000, 60_000))).toEqual(['k1030', 'k1000']);
    expect(kids(publishedKeys([at(1030), at(0), at(1000)], 1100_000, 60_000))).toEqual(['k1030']);
  });
});
