-- What a replica's listing shows of a session another replica holds when
-- that replica stopped or does not answer (its kind, language and name,
-- and for a context's name the id it names), and the listing of one
-- principal's records by key prefix (keys are <tag>/<id>).
ALTER TABLE sessions
  ADD COLUMN kind     text NOT NULL DEFAULT '',
  ADD COLUMN language text NOT NULL DEFAULT '',
  ADD COLUMN name     text NOT NULL DEFAULT '',
  ADD COLUMN of_id    text NOT NULL DEFAULT '';
CREATE INDEX sessions_key ON sessions (session_id COLLATE "C");
