// Summarises a V8 .cpuprofile (node --cpu-prof): the functions with the most self time, and the share of
// time spent under each package (inclusive of nothing: self time only, grouped by where the code lives).
import { readFileSync } from 'node:fs';

interface CpuNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: CpuNode[];
  samples?: number[];
  timeDeltas?: number[];
}

function where(url: string): string {
  if (!url) return '(native)';
  const nm = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return url;
  const short = url.replace(/^file:\/\//, '').split('/').slice(-3).join('/');
  return short;
}

export function topFrames(file: string, n = 15): string {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const self = new Map<number, number>();
  for (const s of prof.samples ?? []) self.set(s, (self.get(s) ?? 0) + 1);
  const total = (prof.samples ?? []).length || 1;
  const byFn = new Map<string, number>();
  for (const node of prof.nodes) {
    const hits = self.get(node.id) ?? node.hitCount ?? 0;
    if (!hits) continue;
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'}  ${where(f.url)}${f.url ? `:${f.lineNumber + 1}` : ''}`;
    byFn.set(key, (byFn.get(key) ?? 0) + hits);
  }
  const idle = [...byFn.entries()].filter(([k]) => k.startsWith('(idle)')).reduce((a, [, v]) => a + v, 0);
  const busy = total - idle;
  const lines = [...byFn.entries()]
    .filter(([k]) => !k.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}`);
  return [`busy ${((100 * busy) / total).toFixed(0)}% of ${total} samples; shares below are of busy time`, ...lines].join('\n');
}

if (require.main === module) {
  for (const f of process.argv.slice(2)) {
    console.log(`${f}:`);
    console.log(topFrames(f, Number(process.env.TOP ?? 25)));
  }
}
