-- What the console lists and summarises of each execution: the tool that
-- ran it, why it ended, how its sandbox was obtained, and the distinct
-- hosts its network audit shows refused (as logindex.Fields has them).
-- Entries recorded before are filled in from their JSON (those holding a
-- \u0000, which jsonb refuses, keep the defaults).
ALTER TABLE executions
  ADD COLUMN tool         text NOT NULL DEFAULT '',
  ADD COLUMN end_reason   text NOT NULL DEFAULT '',
  ADD COLUMN sandbox      text NOT NULL DEFAULT '',
  ADD COLUMN denied_hosts text[] NOT NULL DEFAULT '{}';
UPDATE executions x SET
  tool = coalesce(j.doc->>'tool', ''),
  end_reason = coalesce(j.doc->>'end_reason', ''),
  sandbox = coalesce(j.doc->'usage'->>'sandbox', ''),
  denied_hosts = ARRAY(SELECT DISTINCT n->>'host' FROM jsonb_array_elements(
    CASE WHEN jsonb_typeof(j.doc->'network') = 'array' THEN j.doc->'network' ELSE '[]'::jsonb END) n
    WHERE NOT coalesce((n->>'allowed')::boolean, false) AND n->>'host' IS NOT NULL)
FROM (SELECT rid, entry::jsonb AS doc FROM executions WHERE strpos(entry, '\u0000') = 0) j
WHERE x.rid = j.rid;
-- The console's filters. Every index ends with rid, so newest first is a
-- backward index walk that stops after a page, never a sort: a principal's
-- listings use the ones leading with owner, an operator's (every owner)
-- the others.
-- The window's executions as the overview counts them come from the index
-- alone (an index-only scan): executions_owner, re-made with them, for one
-- principal; executions_window for everyone.
DROP INDEX executions_owner;
CREATE INDEX executions_owner ON executions (owner, rid) INCLUDE (status, sandbox, duration_ms, denied_hosts);
CREATE INDEX executions_window ON executions (rid) INCLUDE (status, sandbox, duration_ms, denied_hosts);
CREATE INDEX executions_tool ON executions (owner, tool, rid);
CREATE INDEX executions_lang_status ON executions (owner, language, status, rid);
CREATE INDEX executions_owner_session ON executions (owner, session_id, rid) WHERE session_id IS NOT NULL;
CREATE INDEX executions_all_status ON executions (status, rid);
CREATE INDEX executions_all_lang ON executions (language, rid);
CREATE INDEX executions_all_tool ON executions (tool, rid);
DROP INDEX executions_session;
CREATE INDEX executions_session ON executions (session_id, rid) WHERE session_id IS NOT NULL;
