// What the engines beside storage (MyRocks) use of the shared SQL core.
export { HostPools } from './host-pools.js';
