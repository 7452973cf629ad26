// Database write commands of the stack's processes, read from their /metrics (`db_commands_total{command,collection}`,
// counted by libs/mongo's command monitor).

export type WriteCounts = Map<string, number>;

/** Sums `db_commands_total` over the given health listeners, by `command collection`. */
export async function readDbWrites(healthUrls: string[]): Promise<WriteCounts> {
  const counts: WriteCounts = new Map();
  for (const url of healthUrls) {
    const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.text());
    for (const line of text.split('\n')) {
      const m = /^db_commands_total\{([^}]*)\}\s+([0-9.eE+-]+)$/.exec(line);
      if (!m) continue;
      const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
      const key = `${labels.command} ${labels.collection}`;
      counts.set(key, (counts.get(key) ?? 0) + Number(m[2]));
    }
  }
  return counts;
}

/** What happened between two readings: the total, and the busiest `command collection` pairs. */
export function writesBetween(before: WriteCounts, after: WriteCounts): { total: number; top: string } {
  const diff = [...after.entries()].map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const).filter(([, v]) => v > 0);
  diff.sort((a, b) => b[1] - a[1]);
  return {
    total: diff.reduce((n, [, v]) => n + v, 0),
    top: diff
      .slice(0, 4)
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
  };
}
