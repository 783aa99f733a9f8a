import { configDefaults, defineConfig } from "vitest/config"

/**
 * `npm run test:unit`: the files that need no database and no socket (pure rules, property tests, services over the
 * in-memory repos). test/support/NoSockets.ts makes a socket opened by one of them fail: such a file belongs to the
 * integration project, which is every other file.
 */
const UNIT = [
  "test/auth/domain/*.test.ts",
  "test/auth/factors/QrCode.test.ts",
  "test/bench/*.test.ts",
  "test/config/*.test.ts",
  "test/domain/*.test.ts",
  "test/iam/{Delegation,LoginBackoff,NodeEd25519,RefreshModel,Rules,TwoStepRules,OAuthFlowRules}.test.ts",
  "test/iam/GrpcWebText.test.ts",
  "test/auth/{AuthErrorMiddleware,CaptchaProtected,ErrorEnvelope}.test.ts",
  "test/Layout.test.ts",
  "test/auth/external/{CallbackRedirect,External,MoreProviderProfiles,ProviderProfiles,SocialProfiles}.test.ts",
  "test/auth/external/{TwitchZoomWorkOSProfiles,TwitterProfile}.test.ts",
  "test/auth/limits/RateLimits.test.ts",
  "test/auth/messages/{AuthMessages,MailTemplate}.test.ts",
  "test/auth/sessions/{ApiKeys,RefreshTokenCodec,SessionsRules}.test.ts",
  "test/auth/signup/SignupDuplicates.test.ts",
  "test/auth/users/{AuditLog,UserJson}.test.ts",
  "test/auth/admin/ConsolePages.test.ts",
  "test/platform/{Cors,DataDirLock,JsonDepth,LatencyFloor,ListenFailure,Logging,OperatorSignature}.test.ts",
  "test/platform/{PasswordHasher,Policy,RateLimitKey,SecureRandom}.test.ts",
  "test/platform/{SmsSender,SqlErrors,TelemetryRules,TokenSigner,WorkerRestarts}.test.ts",
  "test/platform/{LazyModule,YoungGeneration}.test.ts"
]

/**
 * Tests that measure time: they run last, alone, when no other test file competes for the two cores. Run beside
 * the integration files, the timing test's medians moved by up to 10 ms with the load they made.
 */
const ALONE = ["test/security/Timing.test.ts"]

export default defineConfig({
  test: {
    setupFiles: ["test/setup.ts"],
    // PGlite start-up takes seconds; real work is bounded by per-test timeouts.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files run in parallel, but each PGlite costs ~800 MB and a core.
    maxWorkers: 2,
    minWorkers: 1,
    // Only the unit project uses threads; the integration project keeps the default, forks, each file isolated.
    poolOptions: { threads: { isolate: false } },
    projects: [
      {
        extends: true,
        // On the threads pool, which alone runs without a fresh module graph per file (poolOptions above): these
        // files share no state but the modules they import, and importing Effect once per worker rather than once
        // per file makes `npm run test:unit` four times faster. It runs before the integration project, not beside
        // it (groupOrder): each pool has maxWorkers of its own.
        test: {
          name: "unit",
          include: UNIT,
          setupFiles: ["test/support/NoSockets.ts"],
          pool: "threads",
          sequence: { groupOrder: 0 }
        }
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...UNIT, ...ALONE],
          globalSetup: ["test/globalSetup.ts"],
          sequence: { groupOrder: 1 }
        }
      },
      {
        extends: true,
        test: {
          name: "alone",
          include: ALONE,
          globalSetup: ["test/globalSetup.ts"],
          sequence: { groupOrder: 2 }
        }
      }
    ]
  }
})
