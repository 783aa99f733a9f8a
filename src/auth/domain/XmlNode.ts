/**
 * The little of the XML DOM the SAML rules read. The rules take a parsed tree (sso/XmlParser parses with
 * @xmldom/xmldom, node-saml's own parser), so they stay pure.
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

/** Parses XML text to its root element; undefined when it is not well-formed (or declares a DOCTYPE). */
export type XmlParse = (text: string) => XmlNode | undefined

/** The element children of `parent` named `name` in namespace `ns`. */
export const childElements = (parent: XmlNode, ns: string, name: string): Array<XmlNode> =>
  Array.from(parent.childNodes).filter((node) => node.nodeType === 1 && node.localName === name && node.namespaceURI === ns)

export const descendantElements = (parent: XmlNode, ns: string, name: string): Array<XmlNode> =>
  Array.from(parent.getElementsByTagNameNS(ns, name))
