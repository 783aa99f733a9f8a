import * as HttpRouter from "@effect/platform/HttpRouter"

/** The IAM service's own router on the shared port: its routes run behind its error handling, not the auth API's. */
export class IamRouter extends HttpRouter.Tag("iam/IamRouter")<IamRouter>() {}
