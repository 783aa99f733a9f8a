import { type DescMessage, fromJsonString } from "@bufbuild/protobuf"
import { Code, ConnectError } from "@connectrpc/connect"
import { jsonInputProblem } from "../JsonInputProblem.js"

/** What connect-es's JSON serialization reads from a handler's jsonOptions, textDecoder included. */
export interface StrictJsonOptions {
  readonly ignoreUnknownFields: false
  readonly textDecoder: { readonly decode: (input?: Uint8Array) => string }
}

/**
 * JSON options for one method on the gRPC port (Connect, gRPC-Web and gRPC alike, whenever the body is JSON): unknown
 * fields are refused, as over REST, and a body that is not the request message is INVALID_ARGUMENT in
 * jsonInputProblem's words, never protobuf-es's, which quote the value sent.
 *
 * connect-es has no hook around its JSON parse and puts the parser's message into the answer as it is. What it does
 * have: its serializer turns the body's bytes into text with `textDecoder` inside the same try, and a ConnectError
 * thrown there reaches the client unchanged. So the decoder parses the text strictly first and throws the
 * client-safe error; a body that passes is parsed once more by connect (a request message is a few hundred bytes).
 * The transports test sends secret-looking values over every protocol and checks that none comes back.
 */
export const strictJson = (desc: DescMessage): StrictJsonOptions => {
  const utf8 = new TextDecoder()
  return {
    ignoreUnknownFields: false,
    textDecoder: {
      decode: (input) => {
        const text = utf8.decode(input)
        try {
          fromJsonString(desc, text, { ignoreUnknownFields: false })
        } catch (error) {
          throw new ConnectError(jsonInputProblem(desc, error), Code.InvalidArgument)
        }
        return text
      }
    }
  }
}
