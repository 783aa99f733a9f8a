import { SsoHttpLive } from "./SsoHttp.js"

/** SAML single sign-on, switched off: handlers that need nothing. */
export const SsoLive = SsoHttpLive
