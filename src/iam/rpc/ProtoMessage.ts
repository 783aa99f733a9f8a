import { type DescMessage, fromJson, isMessage, type JsonValue, type MessageShape, toJson } from "@bufbuild/protobuf"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { jsonInputProblem } from "../JsonInputProblem.js"

/**
 * A protobuf message as an Effect Schema: the decoded side is the generated message type, the encoded side
 * its proto3 JSON. The RPC group reuses the contract's messages this way instead of restating them, so an
 * Effect client is typed by the same proto as every other client.
 */
export const ProtoMessage = <Desc extends DescMessage>(desc: Desc): Schema.Schema<MessageShape<Desc>, JsonValue> => {
  const message = Schema.declare((u: unknown): u is MessageShape<Desc> => isMessage(u, desc), {
    identifier: desc.typeName
  })
  return Schema.transformOrFail(Schema.Unknown, message, {
    strict: true,
    decode: (json, _options, ast) => {
      try {
        return ParseResult.succeed(fromJson(desc, json as JsonValue))
      } catch (error) {
        // No echo of the input (it may hold a password): the ParseResult carries no actual value either.
        return ParseResult.fail(new ParseResult.Type(ast, undefined, jsonInputProblem(desc, error)))
      }
    },
    encode: (value) => ParseResult.succeed(toJson(desc, value) as unknown)
  }) as unknown as Schema.Schema<MessageShape<Desc>, JsonValue>
}
