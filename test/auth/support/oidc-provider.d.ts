// oidc-provider ships no type declarations; the tests use a handful of its members, typed where they are used.
declare module "oidc-provider" {
  const Provider: any
  export default Provider
}
