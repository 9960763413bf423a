-- Paused sessions shared by replicas: the record of each session's latest
-- checkpoint (the checkpoint itself is in the shared blob store), and in
-- the registry a paused session's claim, held by no replica (paused_at
-- set) until one claims it to resume it.
CREATE TABLE checkpoint_records (
  name     text PRIMARY KEY,
  owner    text NOT NULL,
  id       text NOT NULL,
  ctx_name text NOT NULL DEFAULT '',
  rec      jsonb NOT NULL
);
CREATE INDEX checkpoint_records_id ON checkpoint_records (owner, id);
CREATE INDEX checkpoint_records_ctx_name ON checkpoint_records (owner, ctx_name) WHERE ctx_name <> '';
ALTER TABLE sessions ADD COLUMN paused_at timestamptz;
