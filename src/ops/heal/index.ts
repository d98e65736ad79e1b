export { healCommand, type HealCliOptions } from './heal-command.js';
