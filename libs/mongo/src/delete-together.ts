/**
 * Documents deleted together: ids handed in within `delayMs` of the first go in one deleteMany (`filterOf(ids)`), one
 * command a moment instead of one per document. A failed delete is reported to `onError` and not retried: callers use
 * this for rows whose leftovers a sweep takes (the outbox's published batch markers, settled audit intents).
 */
export function deleteTogether(
  collection: () => { deleteMany(filter: never): Promise<unknown> },
  opts: {
    delayMs: number;
    filterOf: (ids: string[]) => Record<string, unknown>;
    onError: (err: unknown, count: number) => void;
    /** After a delete was tried, whatever became of it: the ids it was for. */
    settled?: (ids: string[]) => void;
  },
) {
  let ids: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  const running = new Set<Promise<unknown>>();
  const now = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!ids.length) return;
    const batch = ids;
    ids = [];
    const done = collection()
      .deleteMany(opts.filterOf(batch) as never)
      .catch((err: unknown) => opts.onError(err, batch.length))
      .finally(() => {
        running.delete(done);
        opts.settled?.(batch);
      });
    running.add(done);
  };
  return {
    add(id: string): void {
      ids.push(id);
      if (!timer) {
        timer = setTimeout(now, opts.delayMs);
        timer.unref();
      }
    },
    /** Deletes what is waiting now and waits for every delete under way. */
    async flush(): Promise<void> {
      now();
      await Promise.allSettled(running);
    },
  };
}
