import { createRequire } from "node:module"

/**
 * The little of the XML DOM the SAML rules read, over @xmldom/xmldom (node-saml's own parser). Its type
 * declarations pull the browser DOM library into the whole program (and with it the browser's Headers and fetch
 * types), so it is loaded untyped and described here.
 */
export interface XmlNode {
  readonly nodeType: number
  readonly localName: string | null
  readonly namespaceURI: string | null
  readonly textContent: string | null
  readonly childNodes: ArrayLike<XmlNode>
  getAttribute(name: string): string | null
  getElementsByTagNameNS(namespace: string, name: string): ArrayLike<XmlNode>
}

interface Parser {
  parseFromString(text: string, mimeType: string): { readonly documentElement: XmlNode | null }
}

const xmldom = createRequire(import.meta.url)("@xmldom/xmldom") as {
  DOMParser: new(options: { errorHandler: Record<string, (message: string) => void> }) => Parser
}

/** The document's root element, or undefined when the text is not well-formed XML (or has a DOCTYPE). */
export const parseXml = (text: string): XmlNode | undefined => {
  if (/<!DOCTYPE/i.test(text)) return undefined
  let failed = false
  try {
    const root = new xmldom.DOMParser({
      errorHandler: { warning: () => undefined, error: () => { failed = true }, fatalError: () => { failed = true } }
    }).parseFromString(text, "application/xml").documentElement
    return failed || root === null ? undefined : root
  } catch {
    return undefined
  }
}

/** The element children of `parent` named `name` in namespace `ns`. */
export const childElements = (parent: XmlNode, ns: string, name: string): Array<XmlNode> =>
  Array.from(parent.childNodes).filter((node) => node.nodeType === 1 && node.localName === name && node.namespaceURI === ns)

export const descendantElements = (parent: XmlNode, ns: string, name: string): Array<XmlNode> =>
  Array.from(parent.getElementsByTagNameNS(ns, name))
