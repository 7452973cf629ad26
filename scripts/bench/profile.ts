// Summarises a V8 .cpuprofile (node --cpu-prof): the functions with the most self time and the share of self time
// under each package or source file of ours. Frames in a bundle (services/*/dist/main.js) are named by the original
// source through the bundle's source map (main.js.map beside it), so a minified frame reads as
// `parse  zod/v4/core/schemas.js:123` rather than `(anonymous)  gateway/dist/main.js:396`.
//
// The samples are taken on a wall-clock timer: a thread that waits inside a system call, or was preempted there (a
// write to a loopback socket wakes the reader, which on a busy machine often runs first), counts as busy in that
// call. Socket writes therefore weigh more here than in the process's CPU time (the bench's CPU rows).
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
}
interface CpuNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: CpuNode[];
  samples?: number[];
  timeDeltas?: number[];
}

interface Place {
  /** Where the code lives: a package name, a file of ours (from its workspace folder), or a node: module. */
  source: string;
  /** The file (`<package>/<path>`, a file of ours, a node: module), with its 1-based line. */
  at: string;
  name: string;
}

const PACKAGE = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\/(.*)$/;
/** A file of ours in a bundle: from its workspace folder on (the last `services/<name>/` or `libs/<name>/`). */
const WORKSPACE_FILE = /(?:^|.*\/)((?:services|libs)\/[^/]+\/.*)$/;

/** A path as it reads in a summary: `<package>/<file inside it>`, a file of ours, else its last three parts. */
function shortSource(path: string): { source: string; file: string } {
  const pkg = PACKAGE.exec(path);
  if (pkg) return { source: pkg[1]!, file: `${pkg[1]}/${pkg[2]}` };
  const file = WORKSPACE_FILE.exec(path)?.[1] ?? path.split('/').slice(-3).join('/');
  return { source: file, file };
}

/** A bundle's source map and the directory its relative sources start from. */
interface BundleMap {
  map: SourceMap;
  dir: string;
}

/** Reads a bundle's source map once (undefined when the bundle has none). */
function sourceMaps() {
  const maps = new Map<string, BundleMap | undefined>();
  return (url: string): BundleMap | undefined => {
    if (maps.has(url)) return maps.get(url);
    let found: BundleMap | undefined;
    try {
      const file = url.startsWith('file:') ? fileURLToPath(url) : url;
      if (existsSync(`${file}.map`))
        found = { map: new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))), dir: dirname(file) };
    } catch {
      // an unreadable map: the frame is named by the bundle
    }
    maps.set(url, found);
    return found;
  };
}

/** Where a frame's code comes from: through the bundle's source map when there is one. */
function placeOf(frame: CallFrame, mapOf: (url: string) => BundleMap | undefined): Place {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return { source: '(native)', at: '(native)', name };
  if (frame.url.startsWith('node:')) {
    const source = frame.url.replace(/^node:internal\//, 'node:');
    return { source, at: `${source}:${frame.lineNumber + 1}`, name };
  }
  const bundle = mapOf(frame.url);
  const entry = bundle?.map.findEntry(frame.lineNumber, frame.columnNumber ?? 0);
  if (bundle && entry && 'originalSource' in entry) {
    const { source, file } = shortSource(resolve(bundle.dir, entry.originalSource));
    return { source, at: `${file}:${entry.originalLine + 1}`, name };
  }
  const { source, file } = shortSource(frame.url.replace(/^file:\/\//, ''));
  return { source, at: `${file}:${frame.lineNumber + 1}`, name };
}

const pct = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1).padStart(5)}%`;

/** The `n` functions with the most self time, then the self time of each source (package or file of ours). */
export function topFrames(file: string, n = 15, sources = 12): string {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const self = new Map<number, number>();
  for (const s of prof.samples ?? []) self.set(s, (self.get(s) ?? 0) + 1);
  const total = (prof.samples ?? []).length || 1;
  const mapOf = sourceMaps();
  const byFn = new Map<string, number>();
  const bySource = new Map<string, number>();
  let idle = 0;
  const service = prof.nodes.map((node) => /services\/([^/]+)\/dist\//.exec(node.callFrame.url)?.[1]).find(Boolean);
  for (const node of prof.nodes) {
    const hits = self.get(node.id) ?? node.hitCount ?? 0;
    if (!hits) continue;
    if (node.callFrame.functionName === '(idle)') {
      idle += hits;
      continue;
    }
    const place = placeOf(node.callFrame, mapOf);
    const key = `${place.name}  ${place.at}`;
    byFn.set(key, (byFn.get(key) ?? 0) + hits);
    bySource.set(place.source, (bySource.get(place.source) ?? 0) + hits);
  }
  const busy = total - idle || 1;
  const top = (m: Map<string, number>, k: number) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, k);
  return [
    `${service ? `${service}: ` : ''}busy ${((100 * busy) / total).toFixed(0)}% of ${total} samples; shares below are of busy time (wall clock: see scripts/bench/profile.ts)`,
    ...top(byFn, n).map(([k, v]) => `${pct(v, busy)}  ${k}`),
    'self time by source:',
    ...top(bySource, sources).map(([k, v]) => `${pct(v, busy)}  ${k}`),
  ].join('\n');
}

if (require.main === module) {
  for (const f of process.argv.slice(2)) {
    console.log(`${f}:`);
    console.log(topFrames(f, Number(process.env.TOP ?? 25)));
  }
}
