import { SettingsHttpLive } from "./SettingsHttp.js"

/** Health, settings and signing keys: handlers alone, over the ports and config AuthHttp is given. */
export const SettingsLive = SettingsHttpLive
