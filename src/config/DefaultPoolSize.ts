/*
 * The default of DB_MAX_POOL_SIZE, which is per worker process: every worker (AUTH_WORKERS, one per core by default)
 * has a pool of its own, so a fixed number per worker would open more connections the more cores a machine has.
 * GoTrue's default, no limit, lets one burst of requests open a connection each until PostgreSQL refuses them all
 * (default max_connections = 100, 3 of them kept for superusers). So the workers of an instance share a budget:
 *
 * - 60 connections for all of an instance's pools. With PostgreSQL's defaults that leaves room for each worker's one
 *   LISTEN connection (the IAM service's cache invalidation) with up to 37 workers, and beyond that for `migrate`, a
 *   psql session, a backup and the other services on the same database.
 * - At most 10 per worker: one Node process seldom has more queries in flight (the benchmark gives both sides 10 per
 *   process), and more connections would only queue inside PostgreSQL.
 * - At least 1: with more than 60 workers each still has a connection; such a machine needs a larger
 *   max_connections or an explicit DB_MAX_POOL_SIZE.
 *
 * Two cores (two workers): 10 each. Eight cores: 7 each, 56 in all. Sixteen: 3 each, 48 in all.
 * DB_MAX_POOL_SIZE=0, set explicitly, keeps GoTrue's meaning: no limit.
 */

/** What an instance's pools may hold together, by default. */
const INSTANCE_POOL_BUDGET = 60

/** The most connections one worker's pool holds by default. */
const WORKER_POOL_CAP = 10

/** DB_MAX_POOL_SIZE's default for each of `workers` processes (a whole number from 1). */
export const defaultPoolSize = (workers: number): number =>
  Math.max(1, Math.min(WORKER_POOL_CAP, Math.floor(INSTANCE_POOL_BUDGET / Math.max(1, workers))))
