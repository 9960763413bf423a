-- The total size of the recorded checkpoints, kept by statement triggers
-- on checkpoint_records, so that CODEXEC_CHECKPOINT_MAX_TOTAL is checked
-- across replicas against one row (locked from a record's write to its
-- commit) instead of a sum over every record. Statement triggers (with
-- transition tables) update the row once per statement, after the
-- statement's own row locks: a retention pass deleting many records and a
-- replica writing one of them cannot deadlock, and the pass updates the
-- row once per batch.
CREATE TABLE checkpoint_total (
  one   boolean PRIMARY KEY DEFAULT true CHECK (one),
  bytes bigint NOT NULL
);
INSERT INTO checkpoint_total (bytes) SELECT coalesce(sum((rec->>'bytes')::bigint), 0) FROM checkpoint_records;
CREATE FUNCTION checkpoint_total_keep() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  added   bigint := 0;
  removed bigint := 0;
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    SELECT coalesce(sum((rec->>'bytes')::bigint), 0) INTO added FROM new_rows;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    SELECT coalesce(sum((rec->>'bytes')::bigint), 0) INTO removed FROM old_rows;
  END IF;
  IF added <> removed THEN
    UPDATE checkpoint_total SET bytes = bytes + added - removed;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER checkpoint_total_insert AFTER INSERT ON checkpoint_records
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION checkpoint_total_keep();
CREATE TRIGGER checkpoint_total_update AFTER UPDATE ON checkpoint_records
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION checkpoint_total_keep();
CREATE TRIGGER checkpoint_total_delete AFTER DELETE ON checkpoint_records
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION checkpoint_total_keep();
