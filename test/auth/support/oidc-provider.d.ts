// oidc-provider ships no type declarations; the tests use a handful of its members, typed where they are used.
declare module "oidc-provider" {
  const Provider: any
  export default Provider
}

declare module "oidc-provider/lib/adapters/memory_adapter.js" {
  export const createMemoryAdapter: (clockTolerance?: number) => unknown
}
