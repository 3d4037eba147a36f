/**
 * The one concurrency limiter Fleet uses: a counting semaphore. Kept here
 * rather than pulled in (p-limit) because the runner also needs to know how
 * many slots are busy for the live view, which p-limit does not expose cheaply.
 */
export class Semaphore {
  private waiting: (() => void)[] = [];
  private busy = 0;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`semaphore size must be a positive integer, got ${size}`);
  }

  get active(): number {
    return this.busy;
  }

  /** Take a slot; the returned function gives it back (calling it twice is harmless). */
  async acquire(): Promise<() => void> {
    if (this.busy >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.busy++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // Hand the slot straight to the next waiter so `busy` never dips and over-admits.
      if (next) next();
      else this.busy--;
    };
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await task();
    } finally {
      release();
    }
  }
}

/** Map with at most `limit` calls in flight; results keep the input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const sem = new Semaphore(Math.max(1, Math.min(limit, items.length || 1)));
  return Promise.all(items.map((item, i) => sem.run(() => fn(item, i))));
}
