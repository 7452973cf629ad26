import { compactMemoryWhenIdle, renderMetrics, youngGenerationBytes } from '../src';

/** Keeps many young objects alive across scavenges, which is what makes V8 grow its young generation. */
function growYoungGeneration() {
  let kept: unknown[] = [];
  for (let round = 0; round < 200 && youngGenerationBytes() <= 4 * 1024 * 1024; round++) {
    const batch = Array.from({ length: 20_000 }, (_, i) => ({ i, s: `v${i}` }));
    kept.push(batch);
    if (kept.length > 20) kept = kept.slice(10);
  }
  return kept.length;
}

describe('compactMemoryWhenIdle', () => {
  it('returns the young generation grown by start-up work to its smallest size, and counts it', async () => {
    growYoungGeneration();
    const grown = youngGenerationBytes();
    expect(grown).toBeGreaterThan(4 * 1024 * 1024);

    const stop = compactMemoryWhenIdle();
    stop();

    expect(youngGenerationBytes()).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect((await renderMetrics()).body).toMatch(/^process_idle_compactions_total 1$/m);
  });

  it('leaves a young generation that is small already alone', async () => {
    const before = (await renderMetrics()).body.match(/^process_idle_compactions_total (\d+)$/m)?.[1];
    compactMemoryWhenIdle()();
    const after = (await renderMetrics()).body.match(/^process_idle_compactions_total (\d+)$/m)?.[1];
    expect(after).toBe(before);
  });
});
