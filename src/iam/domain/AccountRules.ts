import * as Either from "effect/Either"
import { IamError } from "./IamError.js"

/** Column bounds of spec section 2, checked before the database sees a value so the answer is a clear 400. */
export const USERNAME_MAX = 100
export const EMAIL_MAX = 100
export const NAME_MAX = 255
/** Descriptions are `text`; the bound only keeps one request from storing megabytes. */
export const DESCRIPTION_MAX = 1000
export const PASSWORD_MIN = 8
/** bcrypt reads 72 bytes and ignores the rest, so a longer password would be accepted by its prefix. */
export const PASSWORD_MAX_BYTES = 72

// Control characters would let a name forge log lines or look like another name.
const CONTROL = /[\u0000-\u001f\u007f]/
/**
 * What a new username may not hold: control characters in the Unicode sense (Cc: C0, DEL and C1, such as U+0085
 * NEXT LINE), format characters (Cf: the bidirectional overrides and isolates such as U+202E, zero-width spaces and
 * joiners, U+FEFF), lone surrogates (Cs, which no database stores), private-use characters (Co) and the line and
 * paragraph separators (U+2028, U+2029). None shows as itself: each can break or reorder a log line or a page, or make
 * one name look like another.
 */
export const INVISIBLE_IN_USERNAME = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}]/u
const EMAIL = /^[^\s@]+@[^\s@]+$/
const ROLE_NAME = /^[A-Za-z0-9_.-]+$/

export interface Registration {
  readonly username: string
  readonly email: string
  readonly password: string
}

const characters = (s: string): number => [...s].length

export const checkUsername = (username: string): Either.Either<string, IamError> =>
  username.trim() === ""
    ? Either.left(IamError.invalid("username is required"))
    : characters(username) > USERNAME_MAX
    ? Either.left(IamError.invalid(`username must be at most ${USERNAME_MAX} characters`))
    : INVISIBLE_IN_USERNAME.test(username) || username !== username.trim()
    ? Either.left(IamError.invalid("username must not contain control, format or bidirectional characters, or surrounding spaces"))
    : Either.right(username)

/** Emails are compared lower-case: Alice@Example.com and alice@example.com are one account. */
export const normalizeEmail = (email: string): Either.Either<string, IamError> => {
  const normalized = email.trim().toLowerCase()
  return normalized === ""
    ? Either.left(IamError.invalid("email is required"))
    : characters(normalized) > EMAIL_MAX
    ? Either.left(IamError.invalid(`email must be at most ${EMAIL_MAX} characters`))
    : CONTROL.test(normalized)
    ? Either.left(IamError.invalid("email must not contain control characters"))
    : !EMAIL.test(normalized)
    ? Either.left(IamError.invalid("email must be an address containing @"))
    : Either.right(normalized)
}

/**
 * A username to log in with. No account can hold ASCII control characters, and PostgreSQL cannot even compare text
 * holding U+0000, so such input is refused before any lookup. The wider rule of registration (INVISIBLE_IN_USERNAME)
 * is not applied here: accounts registered before it keep signing in.
 */
export const checkLoginUsername = (username: string): Either.Either<string, IamError> =>
  username === ""
    ? Either.left(IamError.invalid("username or email is required"))
    : characters(username) > USERNAME_MAX
    ? Either.left(IamError.invalid(`username must be at most ${USERNAME_MAX} characters`))
    : CONTROL.test(username)
    ? Either.left(IamError.invalid("username must not contain control characters"))
    : Either.right(username)

/**
 * The form in which usernames are compared: lower case, so IAMADMIN cannot be registered beside iamadmin and
 * either spelling signs in. A username is kept as typed. The database compares with lower(username), under its
 * unique index (migration 0003), which folds case by the database's LC_CTYPE: every letter under a UTF-8
 * locale, ASCII letters only under the C locale. This is the same comparison for ASCII names, the in-memory
 * repo's and the login throttle's.
 */
export const usernameKey = (username: string): string => username.toLowerCase()

export const checkPassword = (password: string): Either.Either<string, IamError> =>
  password === ""
    ? Either.left(IamError.invalid("password is required"))
    : characters(password) < PASSWORD_MIN
    ? Either.left(IamError.invalid(`password must be at least ${PASSWORD_MIN} characters`))
    : Buffer.byteLength(password, "utf8") > PASSWORD_MAX_BYTES
    ? Either.left(IamError.invalid(`password must be at most ${PASSWORD_MAX_BYTES} bytes`))
    : Either.right(password)

export const checkRegistration = (input: Registration): Either.Either<Registration, IamError> =>
  Either.all({
    username: checkUsername(input.username),
    email: normalizeEmail(input.email),
    password: checkPassword(input.password)
  })

/**
 * Role names appear as subjects in the Casbin policy next to `user:<id>` subjects, so a colon (or anything
 * outside a plain identifier) could make a role impersonate a user.
 */
export const checkRoleName = (name: string): Either.Either<string, IamError> =>
  name === ""
    ? Either.left(IamError.invalid("name is required"))
    : characters(name) > NAME_MAX
    ? Either.left(IamError.invalid(`name must be at most ${NAME_MAX} characters`))
    : !ROLE_NAME.test(name)
    ? Either.left(IamError.invalid("role name may contain only letters, digits, '_', '-' and '.'"))
    : Either.right(name)

export const checkPermissionName = (name: string): Either.Either<string, IamError> =>
  name.trim() === ""
    ? Either.left(IamError.invalid("name is required"))
    : characters(name) > NAME_MAX
    ? Either.left(IamError.invalid(`name must be at most ${NAME_MAX} characters`))
    : CONTROL.test(name)
    ? Either.left(IamError.invalid("name must not contain control characters"))
    : Either.right(name)

/**
 * An empty description is stored as NULL: proto3 cannot tell "unset" from "". Line breaks are fine in a
 * description; U+0000 is not storable in text at all.
 */
export const checkDescription = (description: string): Either.Either<string | null, IamError> =>
  characters(description) > DESCRIPTION_MAX
    ? Either.left(IamError.invalid(`description must be at most ${DESCRIPTION_MAX} characters`))
    : description.includes("\u0000")
    ? Either.left(IamError.invalid("description must not contain the NUL character"))
    : Either.right(description === "" ? null : description)

/** Serial ids start at 1; proto3 sends an unset id as 0. */
export const checkId = (what: string, id: number): Either.Either<number, IamError> =>
  Number.isInteger(id) && id > 0 ? Either.right(id) : Either.left(IamError.invalid(`${what} is required`))
