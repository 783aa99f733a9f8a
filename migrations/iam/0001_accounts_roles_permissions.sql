-- The IAM data model of spec/auth-microservice.md section 2, column for column. The enumeration values are
-- ours (the spec does not list them; see docs/iam.md): the service's own resources, TOKEN for minting tokens,
-- and PRODUCT and ORDER kept from the original service for applications that check permissions on them.
CREATE TYPE {{schema}}.{{prefix}}resource_type AS ENUM ('USER', 'ROLE', 'PERMISSION', 'TOKEN', 'PRODUCT', 'ORDER');
CREATE TYPE {{schema}}.{{prefix}}action_type AS ENUM ('CREATE', 'READ', 'UPDATE', 'DELETE', 'LIST');

CREATE TABLE {{schema}}.{{prefix}}users (
  id serial PRIMARY KEY,
  username varchar(100) NOT NULL UNIQUE,
  password_hash varchar(255) NOT NULL,
  email varchar(100) NOT NULL UNIQUE CHECK (position('@' in email) > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {{schema}}.{{prefix}}roles (
  id serial PRIMARY KEY,
  name varchar(255) NOT NULL UNIQUE,
  description text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {{schema}}.{{prefix}}permissions (
  id serial PRIMARY KEY,
  name varchar(255) NOT NULL UNIQUE,
  description text,
  resource {{schema}}.{{prefix}}resource_type NOT NULL,
  action {{schema}}.{{prefix}}action_type NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {{schema}}.{{prefix}}user_roles (
  user_id integer NOT NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  role_id integer NOT NULL REFERENCES {{schema}}.{{prefix}}roles (id) ON DELETE CASCADE,
  PRIMARY KEY (user_id, role_id)
);
-- The primary key serves lookups by user; deleting a role looks its rows up by role.
CREATE INDEX ON {{schema}}.{{prefix}}user_roles (role_id);

CREATE TABLE {{schema}}.{{prefix}}role_permissions (
  role_id integer NOT NULL REFERENCES {{schema}}.{{prefix}}roles (id) ON DELETE CASCADE,
  permission_id integer NOT NULL REFERENCES {{schema}}.{{prefix}}permissions (id) ON DELETE CASCADE,
  PRIMARY KEY (role_id, permission_id)
);
CREATE INDEX ON {{schema}}.{{prefix}}role_permissions (permission_id);
