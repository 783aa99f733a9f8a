import { type DescMessage, fromJson, fromJsonString, type JsonValue } from "@bufbuild/protobuf"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { file_gatehouse_iam_v1_iam } from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { jsonInputProblem } from "../../src/iam/JsonInputProblem.js"

// Every request message of the contract.
const REQUESTS: ReadonlyArray<DescMessage> = file_gatehouse_iam_v1_iam.services.flatMap((s) => s.methods.map((m) => m.input))

// Values no description could hold by chance: a marker and random letters, or numbers no field name contains.
const secretText = fc.stringMatching(/^[a-z0-9]{6,12}$/).map((s) => `zq${s}`)
const secretNumber = fc.oneof(fc.integer({ min: 10_000_000, max: 2 ** 52 }), fc.double({ min: 1e7, max: 1e15, noNaN: true }))
const value: fc.Arbitrary<JsonValue> = fc.letrec<{ v: JsonValue }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small" },
    secretText,
    secretNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("v"), { maxLength: 3 }),
    fc.dictionary(secretText, tie("v"), { maxKeys: 3 })
  )
})).v

/** A request body: some of the message's own fields (by proto or JSON name) and perhaps unknown keys, with any values. */
const body = (desc: DescMessage) =>
  fc.tuple(
    fc.array(fc.tuple(fc.constantFrom(...desc.fields.flatMap((f) => [f.name, f.jsonName]), "x"), value), { maxLength: 4 }),
    fc.array(fc.tuple(secretText, value), { maxLength: 2 })
  ).map(([known, unknown]) => Object.fromEntries([...known, ...unknown]))

const sent = (json: JsonValue): ReadonlyArray<string> =>
  typeof json === "string" ? [json]
  : typeof json === "number" ? [String(json)]
  : Array.isArray(json) ? json.flatMap(sent)
  : json !== null && typeof json === "object" ? Object.entries(json).flatMap(([k, v]) => [k, ...sent(v as JsonValue)])
  : []

describe("JSON input problems", () => {
  it.prop("whatever a body holds, the description of why it is refused quotes none of it",
    [fc.constantFrom(...REQUESTS).chain((desc) => fc.tuple(fc.constant(desc), body(desc)))], ([[desc, json]]) => {
      let problem: string | undefined
      try {
        fromJson(desc, json, { ignoreUnknownFields: false })
      } catch (error) {
        problem = jsonInputProblem(desc, error)
      }
      fc.pre(problem !== undefined)
      for (const piece of sent(json).filter((p) => p.startsWith("zq") || /^\d{5,}/.test(p))) expect(problem).not.toContain(piece)
    })

  it.prop("a body that is not JSON, or not an object, is described without its text",
    [fc.constantFrom(...REQUESTS), secretText], ([desc, secret]) => {
      for (const text of [`{"${secret}`, JSON.stringify(secret), `[${JSON.stringify(secret)}]`, `{"a": ${secret}}`]) {
        let problem = ""
        try {
          fromJsonString(desc, text, { ignoreUnknownFields: false })
        } catch (error) {
          problem = jsonInputProblem(desc, error)
        }
        expect(problem).not.toBe("")
        expect(problem).not.toContain(secret)
      }
    })

  it("names the field and the type it takes", () => {
    const login = REQUESTS.find((d) => d.name === "LoginRequest")!
    const problem = (json: JsonValue) => {
      try {
        fromJson(login, json, { ignoreUnknownFields: false })
        return undefined
      } catch (error) {
        return jsonInputProblem(login, error)
      }
    }
    expect(problem({ username: "a", password: 98765432 })).toBe("field password must be a string")
    expect(problem({ username: "a", email: "b" })).toBe("only one of username, email may be set")
    expect(problem({ passwort: "x" })).toBe("request has a field LoginRequest does not define (its fields: username, email, password)")
  })
})
