// B: the bare node:http server every row is read against, measured first.
import type { BenchContext } from '../context';
import { measure } from '../load';

export async function baselineRow(ctx: BenchContext) {
  const b = await measure({ url: ctx.baselineUrl }, ctx.settings.load);
  ctx.table.B = b.rps;
  ctx.table.add('B: bare node:http {"ok":true}', b);
}
