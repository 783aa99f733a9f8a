import { Layer } from "effect"
import { RateLimitsRepo } from "../../../src/auth/limits/RateLimitsRepo.js"
import { OutboxRepo } from "../../../src/auth/messages/OutboxRepo.js"
import { RecipientSendsRepo } from "../../../src/auth/messages/RecipientSendsRepo.js"
import { SendQuotaRepo } from "../../../src/auth/messages/SendQuotaRepo.js"
import { FlowStateRepo } from "../../../src/auth/sessions/FlowStateRepo.js"
import { RefreshTokensRepo } from "../../../src/auth/sessions/RefreshTokensRepo.js"
import { SessionsRepo } from "../../../src/auth/sessions/SessionsRepo.js"
import { AuditLogRepo } from "../../../src/auth/users/AuditLogRepo.js"
import { IdentitiesRepo } from "../../../src/auth/users/IdentitiesRepo.js"
import { OneTimeTokensRepo } from "../../../src/auth/users/OneTimeTokensRepo.js"
import { PendingTokensRepo } from "../../../src/auth/users/PendingTokensRepo.js"
import { OtpAttemptsRepo } from "../../../src/auth/users/OtpAttemptsRepo.js"
import { UsersRepo } from "../../../src/auth/users/UsersRepo.js"

export type AuthRepos = UsersRepo | IdentitiesRepo | SessionsRepo | RefreshTokensRepo | OtpAttemptsRepo | FlowStateRepo | SendQuotaRepo | RecipientSendsRepo | RateLimitsRepo | AuditLogRepo | PendingTokensRepo | OneTimeTokensRepo | OutboxRepo

/** Every auth repo in memory, sharing one users table (`users` swaps it, e.g. for a wrapped UsersRepo.Test). */
export const MemoryRepos = (users: Layer.Layer<UsersRepo> = UsersRepo.Test): Layer.Layer<AuthRepos> =>
  RefreshTokensRepo.Test.pipe(
    Layer.provideMerge(SessionsRepo.Test),
    Layer.provideMerge(Layer.mergeAll(users, IdentitiesRepo.Test, OtpAttemptsRepo.Test, FlowStateRepo.Test, SendQuotaRepo.Test, RecipientSendsRepo.Test, RateLimitsRepo.Test, AuditLogRepo.Test, PendingTokensRepo.Test, OneTimeTokensRepo.Test, OutboxRepo.Test))
  )
