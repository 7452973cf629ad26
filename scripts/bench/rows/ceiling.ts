// The physical limit: the database with the MongoDB driver alone (no services), same database, same run; and a
// JetStream publish alone. Their CPU per operation is kept for the floor row of the events section.
import { cpuPart, type BenchContext } from '../context';
import { cpuAround } from '../cpu';
import { publishCeiling, writeCeilings } from '../ceiling';
import { dbPrefix, runId } from '../run';

export async function ceilingRows(ctx: BenchContext) {
  const { table, settings } = ctx;
  const driverLabel = (pid: number, comm: string) => (pid === process.pid ? 'driver (bench)' : comm);
  const c = await writeCeilings(ctx.infra.MONGO_URL, dbPrefix, settings.load, 50, {
    insertOne: cpuAround('raw insertOne', driverLabel, (cpu) => (ctx.carry.cpuInsertOne = cpu.text)),
    insertMany: cpuPart(ctx, 'row', 'document of an insertMany of 100', driverLabel),
  });
  table.addCeiling('insertOne x50', c.insertOne, 'documents/s, 50 concurrent callers');
  table.addCeiling('insertMany of 100', c.insertMany, 'documents/s, one caller; p50/p99 per insertMany');
  table.addCeiling('updateOne by _id x50', c.updateOne, 'updates/s, 50 concurrent callers');
  const clientLabel = (pid: number, comm: string) => (pid === process.pid ? 'client (bench)' : comm);
  const published = await publishCeiling(
    ctx.stack.natsUrl,
    runId,
    settings.load,
    50,
    cpuPart(ctx, 'publish', 'JetStream publish', clientLabel),
  );
  table.addCeiling(
    'JetStream publish x50',
    published,
    'messages/s into a file stream, 50 concurrent callers, a message id each',
  );
}
