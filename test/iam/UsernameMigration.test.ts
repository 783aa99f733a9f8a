import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { migrate, readMigrations } from "../../src/platform/sql/Migrator.js"
import { sqlState } from "../../src/platform/sql/SqlErrors.js"
import { TestDatabase } from "../support/TestDatabase.js"

/**
 * Migration iam/0003 on a database that already holds usernames differing only in case: the start-up stops
 * with a message that says what to do, changing nothing; once the operator has renamed the spares, it applies.
 */
const before0003 = readMigrations().filter((m) => m.product === "auth" || m.version < 3)

layer(TestDatabase, { timeout: 120_000 })("iam/0003 over usernames that differ only in case", (it) => {
  it.effect("stops the start-up, naming the problem and how to list the accounts; applies once they are renamed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* migrate({ namespace: "", migrations: before0003 })
      const insert = (username: string) =>
        sql`INSERT INTO iam.users ${sql.insert({ username, email: `${username}-${Math.random()}@example.com`, password_hash: "x" })}`
      yield* Effect.forEach(["iamadmin", "IAMADMIN", "IamAdmin", "bob", "BOB", "carol"], insert)

      const failed = yield* Effect.flip(migrate({ namespace: "" }))
      expect(failed.message).toContain("migration iam/0003_usernames_and_login_throttle failed")
      expect(failed.message).toContain("2 username(s) in iam.users belong to several accounts that differ only in case")
      expect(failed.message).toContain("rename all but one account of each")
      expect(failed.message).toContain("SELECT id, username FROM iam.users WHERE lower(username) IN")
      // Nothing applied: the index is not there, the names are as they were.
      const [{ count }] = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM iam.gatehouse_migrations WHERE version = 3`
      expect(count).toBe(0)

      yield* sql`UPDATE iam.users SET username = username || '-' || id WHERE username IN ('IAMADMIN', 'IamAdmin', 'BOB')`
      yield* migrate({ namespace: "" })
      expect(sqlState(yield* Effect.flip(insert("CAROL")))).toBe("23505")
    }))
})
