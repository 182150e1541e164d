export { Metrics } from "./metrics";
export { RequestObserver, UNMATCHED } from "./requests";
export { opsRoutes, readiness, stats, ENDPOINTS, SERVICE } from "./routes";
export { docsRoutes } from "./docs";
