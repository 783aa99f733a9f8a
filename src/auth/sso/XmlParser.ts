import { createRequire } from "node:module"
import type { XmlNode } from "../domain/XmlNode.js"

interface Parser {
  parseFromString(text: string, mimeType: string): { readonly documentElement: XmlNode | null }
}

interface XmlDom {
  DOMParser: new(options: { errorHandler: Record<string, (message: string) => void> }) => Parser
}

/**
 * @xmldom/xmldom (node-saml's parser), loaded untyped: its type declarations pull the browser DOM library into the
 * whole program (and with it the browser's Headers and fetch types). Required on the first parse, not at start-up:
 * only SAML parses XML, and most servers never enable it.
 */
let xmldomLoaded: XmlDom | undefined
const xmldom = (): XmlDom => (xmldomLoaded ??= createRequire(import.meta.url)("@xmldom/xmldom") as XmlDom)

/**
 * A NUL, raw or as a character reference: XML 1.0 allows neither, xmldom takes the reference, and a NUL read out of
 * the document (an Issuer, an entity ID) would reach PostgreSQL, which refuses it in text (a 500).
 */
const NUL = /\u0000|&#0+;|&#x0+;/i

/** The document's root element, or undefined when the text is not well-formed XML or declares a DOCTYPE. */
export const parseXml = (text: string): XmlNode | undefined => {
  if (/<!DOCTYPE/i.test(text) || NUL.test(text)) return undefined
  let failed = false
  // Outside the try below: a library that cannot be loaded is an error to see, not a document to refuse.
  const { DOMParser } = xmldom()
  try {
    const root = new DOMParser({
      errorHandler: { warning: () => undefined, error: () => { failed = true }, fatalError: () => { failed = true } }
    }).parseFromString(text, "application/xml").documentElement
    return failed || root === null ? undefined : root
  } catch {
    return undefined
  }
}
