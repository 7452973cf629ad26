/**
 * Serializes writes to the same documents inside one process. Mongo-wire servers that apply an update by reading
 * the document and writing it back whole (FerretDB) lose one of two concurrent updates of a document; every writer
 * of a document (the repository's and the outbox's clears) goes through its writer's lock so they never overlap.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(keys: unknown[], fn: () => Promise<T>): Promise<T> {
    const names = [...new Set(keys.map(String))];
    const before = names.map((k) => this.tails.get(k) ?? Promise.resolve());
    const result = Promise.all(before.map((p) => p.catch(() => undefined))).then(fn);
    const tail = result.catch(() => undefined);
    for (const k of names) this.tails.set(k, tail);
    void tail.then(() => {
      for (const k of names) if (this.tails.get(k) === tail) this.tails.delete(k);
    });
    return result;
  }
}
