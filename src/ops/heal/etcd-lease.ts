import type { Campaign, Election, Etcd3 } from 'etcd3';
import { ShardKitError } from '../../errors.js';

export interface LeaseHooks {
  /** This supervisor holds the lease: it may act. */
  onElected(): void;
  /** It lost the lease (keep-alive failed, revoked, etcd gone): it must stop acting at once. */
  onLost(err: Error): void;
}

/**
 * Exactly one acting supervisor across machines, as Patroni's leader key and VTOrc's shard lock:
 * an etcd election whose key lives on a lease with a TTL. The holder keeps it alive; if it dies,
 * hangs or is cut off from etcd, the lease expires after `ttlSeconds` and another supervisor is
 * elected. A holder whose keep-alive fails hears it (`onLost`) and stops acting before anyone
 * else can be elected, then campaigns again.
 */
export class EtcdActingLease {
  private campaign: Campaign | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  private constructor(private readonly client: Etcd3, private readonly election: Election, private readonly id: string, private readonly hooks: LeaseHooks) {}

  static async open(options: { endpoints: string[]; name: string; ttlSeconds: number; id: string }, hooks: LeaseHooks): Promise<EtcdActingLease> {
    let mod: typeof import('etcd3');
    try {
      mod = await import('etcd3');
    } catch (err) {
      throw new ShardKitError('MISSING_DEPENDENCY', 'a heal lease in etcd needs the npm package etcd3 (npm install etcd3)', { cause: err });
    }
    const client = new mod.Etcd3({ hosts: options.endpoints });
    const lease = new EtcdActingLease(client, client.election(options.name, options.ttlSeconds), options.id, hooks);
    lease.run();
    return lease;
  }

  private run(): void {
    if (this.closed) return;
    const campaign = this.election.campaign(this.id);
    this.campaign = campaign;
    campaign.on('elected', () => {
      if (this.campaign === campaign && !this.closed) this.hooks.onElected();
    });
    campaign.on('error', (err: Error) => {
      if (this.campaign !== campaign || this.closed) return;
      this.campaign = undefined;
      this.hooks.onLost(err);
      this.retry = setTimeout(() => this.run(), 1000);
    });
  }

  /** Resigns (another supervisor is elected at once) and closes the client. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== undefined) clearTimeout(this.retry);
    await this.campaign?.resign().catch(() => undefined);
    this.client.close();
  }
}
