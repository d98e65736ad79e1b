/** Upper bounds (seconds) of the latency buckets every shardkit histogram uses. */
export const LATENCY_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * A latency histogram kept in plain numbers, turned into Prometheus values only when scraped:
 * recording is a few additions, no allocation and no label hashing (prom-client's Histogram
 * hashes its labels on every observation, which cost as much CPU as serving an object: bench/http).
 */
export class LatencyHistogram {
  /** Non-cumulative counts per bucket of LATENCY_BUCKETS; the last slot is +Inf. */
  readonly buckets: number[] = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  sum = 0;
  count = 0;

  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    this.buckets[i]!++;
    this.sum += seconds;
    this.count++;
  }
}
