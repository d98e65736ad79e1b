// The optional route plugins `serve` and `openapi` add to the app (http/app.ts mounts the core ones).
export { ticketsRoutes } from './tickets-routes.js';
export { widecolumnDisabledRoutes, widecolumnRoutes } from './widecolumn-routes.js';
