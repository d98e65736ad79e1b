export { healCommand, type HealCliOptions } from '../../ops/heal/index.js';
