import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { describeAdoptedRows, describeGoTrueSchema, recognizeGoTrue } from "../auth/domain/GoTrueRelease.js"
import { GoTrueAdoptionRepo } from "../auth/users/GoTrueAdoptionRepo.js"
import { TrigramIndexesRepo } from "../auth/users/TrigramIndexesRepo.js"
import { type AppConfig, configLayer } from "../config/AppConfig.js"
import type { DatabaseSettings } from "../config/PlatformConfig.js"
import type { LockHolder } from "../platform/process/DataDirLock.js"
import { lazyModule } from "../platform/LazyModule.js"
import { BcryptPasswordHasher } from "../platform/PasswordHasher.js"
import { SecureRandom } from "../platform/SecureRandom.js"
import { type Database, type DatabaseUnavailable, EmbeddedDatabase, PostgresDatabase } from "../platform/sql/Database.js"
import { migrate } from "../platform/sql/Migrator.js"

/*
 * The start-up work before serving: the database, the migrations, and a cluster primary's once-only work. Apart from
 * ServerLive.ts (the routes), so that a cluster's primary and the commands load only this, not the whole server.
 */

// A second `migrate` waits for the first to release the embedded database instead of failing; an embedded
// database held by a running server is refused at once (see lockDataDir).
export const databaseFor = (
  config: DatabaseSettings,
  lock: { readonly wait: Duration.DurationInput; readonly holder: LockHolder }
): Layer.Layer<Database, DatabaseUnavailable> =>
  Option.match(config.db.url, {
    onNone: () => EmbeddedDatabase({ dataDir: Option.some(config.dataDir), lockWait: lock.wait, lockHolder: lock.holder }),
    onSome: (url) => PostgresDatabase({ url, maxPoolSize: config.db.maxPoolSize })
  })

/** Applies the pending migrations of both products and logs which. */
export const migrations = (config: DatabaseSettings) =>
  Effect.gen(function*() {
    // A GoTrue database (switching from Supabase Auth in place): which release made it, before anything changes.
    const record = yield* GoTrueAdoptionRepo.migrationRecord(config.db.namespace)
    if (record !== undefined) {
      const { text, warning } = describeGoTrueSchema(recognizeGoTrue(record))
      yield* warning ? Effect.logWarning(`GoTrue's schema: ${text}`) : Effect.logInfo(`GoTrue's schema: made by ${text}`)
    }
    const applied = yield* migrate({ namespace: config.db.namespace })
    yield* Effect.logInfo(applied.length === 0 ? "migrations: up to date" : `migrations: applied ${applied.length}`).pipe(
      Effect.annotateLogs("migrations", applied.map((m) => `${m.product}/${String(m.version).padStart(4, "0")}_${m.name}`))
    )
    if (record !== undefined) yield* logAdoptedRows
    const untrigrammed = yield* TrigramIndexesRepo.missing(config.db.namespace)
    if (untrigrammed.length > 0) {
      yield* Effect.logWarning("pg_trgm is not available (or was not when the migrations ran): the admin list's filter and the " +
        "audit log's author filter scan their tables, which costs seconds at a million rows. CREATE EXTENSION pg_trgm, " +
        "then create the indexes of migrations/auth/0024 by hand").pipe(Effect.annotateLogs("missing_indexes", untrigrammed))
    }
  })

/** What an adopted GoTrue database holds, logged after the migrations: a report, never a reason to stop. */
const logAdoptedRows = GoTrueAdoptionRepo.adoptedRows.pipe(
  Effect.flatMap((rows) => Effect.logInfo(describeAdoptedRows(rows)).pipe(Effect.annotateLogs("adopted", rows))),
  Effect.catchAll(() => Effect.logWarning("could not count GoTrue's rows (an older schema?): the migrations are applied all the same"))
)

// The IAM service is loaded only when the primary has an admin to make: it is most of the server's code.
const ConfiguredAdminLive = Layer.unwrapEffect(lazyModule("the IAM service", () => import("../iam/IamLive.js")).pipe(
  Effect.map(({ IamConfiguredAdminLive, IamServicesLive, IamWithoutOAuth }) =>
    IamConfiguredAdminLive.pipe(
      Layer.provide(IamServicesLive),
      // Making the admin signs nobody in: no provider is needed.
      Layer.provide(Layer.mergeAll(BcryptPasswordHasher(), SecureRandom.Live, IamWithoutOAuth))
    )
  )
))

/**
 * A cluster primary's once-only start-up work: the migrations, then the configured IAM admin, made here once because
 * workers making it together would race for its username.
 */
export const PrimaryStartLive = (config: AppConfig) => {
  const { email, password, username } = config.iam.bootstrapAdmin
  const adminConfigured = config.iam.enabled && Option.isSome(email) && Option.isSome(password) && Option.isSome(username)
  return (adminConfigured ? ConfiguredAdminLive : Layer.empty).pipe(
      Layer.provide(Layer.effectDiscard(migrations(config))),
      Layer.provide(configLayer(config)),
      Layer.provide(databaseFor(config, { wait: "5 seconds", holder: "server" }))
    )
}

