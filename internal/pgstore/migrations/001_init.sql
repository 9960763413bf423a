-- Scripts: the current version of each script of each principal, and the
-- earlier versions. meta is the script's metadata as metadata.json holds it.
CREATE TABLE scripts (
  owner   text NOT NULL,
  name    text NOT NULL,
  version integer NOT NULL,
  meta    jsonb NOT NULL,
  code    text NOT NULL,
  PRIMARY KEY (owner, name)
);
CREATE TABLE script_versions (
  owner   text NOT NULL,
  name    text NOT NULL,
  version integer NOT NULL,
  meta    jsonb NOT NULL,
  code    text NOT NULL,
  PRIMARY KEY (owner, name, version)
);

-- Execution history. rid orders executions as the embedded index does
-- (executed_at in ms * 1024 + a slot from the id); words are the entry's
-- searchable words (made by codexec, see words.go); entry is the whole log
-- entry as JSON text (text, not jsonb: outputs may hold \u0000).
CREATE TABLE executions (
  rid           bigint PRIMARY KEY,
  id            text NOT NULL UNIQUE,
  owner         text NOT NULL,
  session_id    text,
  language      text NOT NULL,
  status        text NOT NULL,
  exit_code     integer,
  duration_ms   bigint NOT NULL,
  executed_at   bigint NOT NULL,
  code_preview  text NOT NULL,
  error_preview text,
  words         tsvector NOT NULL,
  entry         text NOT NULL,
  written_at    timestamptz NOT NULL
);
CREATE INDEX executions_owner ON executions (owner, rid);
CREATE INDEX executions_status ON executions (owner, status, rid);
CREATE INDEX executions_lang ON executions (owner, language, rid);
CREATE INDEX executions_words ON executions USING gin (words);
CREATE INDEX executions_session ON executions (session_id) WHERE session_id IS NOT NULL;

-- Session registry: replicas with their lease, sessions with their owner.
CREATE TABLE replicas (
  id        text PRIMARY KEY,
  addr      text NOT NULL,
  last_seen timestamptz NOT NULL
);
CREATE TABLE sessions (
  session_id   text PRIMARY KEY,
  replica_id   text NOT NULL,
  replica_addr text NOT NULL,
  claimed_at   timestamptz NOT NULL,
  lost_at      timestamptz
);
CREATE INDEX sessions_replica ON sessions (replica_id) WHERE lost_at IS NULL;
