/** The minimal server reads the same variables as Gatehouse, so the benchmark hands both sides one environment. */
export interface MinimalConfig {
  readonly databaseUrl: string
  readonly host: string
  readonly port: number
  readonly grpcPort: number
  readonly workers: number
  readonly jwtSecret: string
  readonly jwtExp: number
  readonly issuer: string
  readonly pasetoSecretKey: string
  readonly pasetoKeyId: string
  readonly iamIssuer: string
}

const required = (env: NodeJS.ProcessEnv, name: string): string => {
  const value = env[name]
  if (value === undefined || value === "") throw new Error(`${name} is required`)
  return value
}

export const minimalConfig = (env: NodeJS.ProcessEnv): MinimalConfig => ({
  databaseUrl: required(env, "DATABASE_URL"),
  host: env.AUTH_API_HOST ?? "127.0.0.1",
  port: Number(required(env, "AUTH_API_PORT")),
  grpcPort: Number(required(env, "AUTH_IAM_GRPC_PORT")),
  workers: Number(env.AUTH_WORKERS ?? "1"),
  jwtSecret: required(env, "AUTH_JWT_SECRET"),
  jwtExp: Number(env.AUTH_JWT_EXP ?? "3600"),
  issuer: required(env, "API_EXTERNAL_URL"),
  pasetoSecretKey: required(env, "AUTH_IAM_PASETO_SECRET_KEY"),
  pasetoKeyId: required(env, "AUTH_IAM_PASETO_KEY_ID"),
  iamIssuer: env.AUTH_IAM_ISSUER ?? "gatehouse-iam"
})
