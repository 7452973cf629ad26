import { http } from '@platform/testkit';

/** The sum of a metric's samples whose labels include `labels` (Prometheus text format), or undefined if none. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^[^{ ]+(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const have = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) total = (total ?? 0) + Number(m[2]);
  }
  return total;
}

/** GET <healthUrl>/metrics as text. */
export async function scrape(healthUrl: string | undefined): Promise<string> {
  if (!healthUrl) throw new Error('the process has no health listener (start the stack with healthPorts: true)');
  const res = await http('GET', `${healthUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return String(res.body);
}
