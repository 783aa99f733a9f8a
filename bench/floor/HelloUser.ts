/** A user as GET /user answers it (about 1.1 KB of JSON): what both hello servers send, with no database. */
export const HELLO_USER = {
  id: "42a334fd-eab9-4290-9a5f-8ffa30536dc8",
  aud: "authenticated",
  role: "authenticated",
  email: "hello.floor@example.com",
  email_confirmed_at: "2026-11-24T03:01:24.523Z",
  phone: "",
  confirmed_at: "2026-11-24T03:01:24.523Z",
  last_sign_in_at: "2026-11-24T03:01:47.311Z",
  app_metadata: { provider: "email", providers: ["email"] },
  user_metadata: {
    sub: "42a334fd-eab9-4290-9a5f-8ffa30536dc8",
    email: "hello.floor@example.com",
    email_verified: true,
    phone_verified: false
  },
  identities: [{
    identity_id: "69e9caa3-1983-4111-8be4-c8ce47a81959",
    id: "42a334fd-eab9-4290-9a5f-8ffa30536dc8",
    user_id: "42a334fd-eab9-4290-9a5f-8ffa30536dc8",
    identity_data: {
      sub: "42a334fd-eab9-4290-9a5f-8ffa30536dc8",
      email: "hello.floor@example.com",
      email_verified: false,
      phone_verified: false
    },
    provider: "email",
    last_sign_in_at: "2026-11-24T03:01:24.523Z",
    created_at: "2026-11-24T03:01:24.523Z",
    updated_at: "2026-11-24T03:01:24.523Z",
    email: "hello.floor@example.com"
  }],
  created_at: "2026-11-24T03:01:24.523Z",
  updated_at: "2026-11-24T03:01:47.311Z",
  is_anonymous: false
}
